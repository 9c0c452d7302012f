package lbpkg

import (
	"fmt"
	"html"
	"strings"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
)

// icon is the package icon: a rounded square with the package's initials
// in a colour derived from the plugin name.
func icon(d plugin.Declaration) []byte {
	var initials []rune
	for _, r := range d.Meta.Name {
		if r >= 'A' && r <= 'Z' && len(initials) < 2 {
			initials = append(initials, r)
		}
	}
	if len(initials) == 0 {
		initials = []rune(strings.ToUpper(d.Plugin[:1]))
	}
	hue := 0
	for _, c := range d.Plugin {
		hue = (hue*31 + int(c)) % 360
	}
	return []byte(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">
<rect x="4" y="4" width="120" height="120" rx="24" fill="hsl(%d,55%%,42%%)"/>
<text x="64" y="82" font-family="Helvetica,Arial,sans-serif" font-size="48" font-weight="700" text-anchor="middle" fill="#fff">%s</text>
</svg>
`, hue, html.EscapeString(string(initials))))
}

// pageHTML is the declared page's own HTML, or a placeholder for a page
// that brings none.
func pageHTML(p plugin.Page) []byte {
	if len(p.HTML) > 0 {
		return p.HTML
	}
	return []byte(fmt.Sprintf(`<!doctype html>
<html><head><meta charset="utf-8"><title>%s</title></head>
<body style="font-family:sans-serif;margin:2em">
<h1>%s</h1>
<p>This page is not available inside LangBot yet; use the service's own console.</p>
<p lang="zh-Hans">此页面暂不能在 LangBot 中使用，请使用服务自带的控制台。</p>
</body></html>
`, html.EscapeString(p.Label.EnUS), html.EscapeString(p.Label.EnUS+" / "+p.Label.ZhHans)))
}

// readme is the package README in lang.
func (g generator) readme(lang string) []byte {
	zh := lang == i18n.ZhHans
	tr := func(en, z string) string {
		if zh {
			return z
		}
		return en
	}
	var b strings.Builder
	d := g.decl
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", d.Meta.Label.In(lang), d.Meta.Description.In(lang))
	b.WriteString(tr(
		"This package forwards every call to the `"+d.Plugin+"` service over NATS; it holds no logic of its own. "+
			"Fill in the NATS address (and credentials) below after installing; the service must run on the same NATS.\n\n",
		"本插件把每次调用通过 NATS 转发给 `"+d.Plugin+"` 服务，自身不含业务逻辑。安装后请填写下面的 NATS 地址（及凭据）；服务需连接同一个 NATS。\n\n"))
	if len(d.Commands) > 0 {
		b.WriteString(tr("## Commands\n\n", "## 命令\n\n"))
		for _, c := range d.Commands {
			fmt.Fprintf(&b, "- `!%s`: %s\n", c.Name, c.Description.In(lang))
		}
		b.WriteString("\n")
	}
	if len(d.Tools) > 0 {
		b.WriteString(tr("## Tools\n\n", "## 工具\n\n"))
		for _, t := range d.Tools {
			fmt.Fprintf(&b, "- `%s` (%s): %s\n", t.Name, t.Label.In(lang), t.Description.In(lang))
		}
		b.WriteString("\n")
	}
	if len(d.Events) > 0 {
		b.WriteString(tr("## Events\n\n", "## 事件\n\n"))
		for _, e := range d.Events {
			fmt.Fprintf(&b, "- `%s`\n", e)
		}
		b.WriteString("\n")
	}
	if len(d.Pages) > 0 {
		b.WriteString(tr("## Pages\n\n", "## 页面\n\n"))
		for _, p := range d.Pages {
			fmt.Fprintf(&b, "- `%s`: %s\n", p.ID, p.Label.In(lang))
		}
		b.WriteString("\n")
	}
	b.WriteString(tr("## Configuration\n\n| name | type | default | |\n|---|---|---|---|\n", "## 配置\n\n| 名称 | 类型 | 默认值 | |\n|---|---|---|---|\n"))
	for _, c := range d.Config {
		def := fmt.Sprint(c.Default)
		if s, ok := c.Default.(string); ok {
			def = "`" + s + "`"
			if s == "" {
				def = tr("(empty)", "（空）")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type, def, strings.ReplaceAll(c.Label.In(lang)+": "+c.Description.In(lang), "|", "\\|"))
	}
	b.WriteString(tr(
		"\nWhen NATS or the service is unavailable, commands answer one line saying so, tools return an `unavailable` error, "+
			"events pass unchanged and pages show an error: LangBot itself keeps working.\n\n"+
			"Bundles nats-py "+NatsPyVersion+" (Apache-2.0), the official NATS client.\n",
		"\nNATS 或服务不可用时：命令回复一行提示，工具返回 `unavailable` 错误，事件原样放行，页面显示错误；LangBot 本身不受影响。\n\n"+
			"内含官方 NATS 客户端 nats-py "+NatsPyVersion+"（Apache-2.0）。\n"))
	return []byte(b.String())
}
