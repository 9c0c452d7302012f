// Package i18n holds the message catalogues of the services: one flat
// key -> template map per language, embedded in the binary, with {name}
// placeholders.
//
// Lookup falls back from the requested language to en_US and then to the key
// itself, so a missing translation degrades to English and a missing key is
// visible rather than empty.
//
// A template names a chat command as "{prefix}<word>" (PrefixArg), never with
// a prefix of its own: the prefix is the bot's. PrefixedText fills it, and
// CheckCommandPrefix finds templates that hard-code one (prefix.go).
//
// It imports only the standard library.
package i18n

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Languages the catalogues are written in.
const (
	EnUS   = "en_US"
	ZhHans = "zh_Hans"
)

// ErrCatalog is returned by Load when a catalogue is malformed or the
// languages disagree on keys or placeholders.
var ErrCatalog = errors.New("i18n: invalid catalogue")

var placeholderRE = regexp.MustCompile(`\{([a-z_][a-z0-9_]*)\}`)

// Catalog is a set of templates by language and key. It is immutable after
// Load and safe for concurrent use.
type Catalog struct {
	langs map[string]map[string]string
}

// Load reads every <lang>.json file in dir of fsys (a flat JSON object of
// key -> template) and checks that all languages have the same keys with the
// same placeholder sets and that en_US is present.
func Load(fsys fs.FS, dir string) (*Catalog, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCatalog, err)
	}
	c := &Catalog{langs: make(map[string]map[string]string)}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCatalog, err)
		}
		m := make(map[string]string)
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCatalog, name, err)
		}
		c.langs[strings.TrimSuffix(name, ".json")] = m
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalog) check() error {
	base, ok := c.langs[EnUS]
	if !ok {
		return fmt.Errorf("%w: no %s catalogue", ErrCatalog, EnUS)
	}
	var problems []string
	for lang, m := range c.langs {
		if lang == EnUS {
			continue
		}
		for k, v := range base {
			w, ok := m[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s lacks %q", lang, k))
				continue
			}
			if !slices.Equal(Placeholders(v), Placeholders(w)) {
				problems = append(problems, fmt.Sprintf("%s %q placeholders %v, %s has %v", EnUS, k, Placeholders(v), lang, Placeholders(w)))
			}
		}
		for k := range m {
			if _, ok := base[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s has %q that %s lacks", lang, k, EnUS))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s", ErrCatalog, strings.Join(problems, "; "))
	}
	return nil
}

// Placeholders returns the sorted, distinct placeholder names of a template.
func Placeholders(tmpl string) []string {
	var names []string
	for _, m := range placeholderRE.FindAllStringSubmatch(tmpl, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

// Languages returns the catalogue's languages, sorted.
func (c *Catalog) Languages() []string {
	out := make([]string, 0, len(c.langs))
	for l := range c.langs {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Keys returns the en_US keys, sorted.
func (c *Catalog) Keys() []string {
	out := make([]string, 0, len(c.langs[EnUS]))
	for k := range c.langs[EnUS] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Has reports whether lang is one of the catalogue's languages.
func (c *Catalog) Has(lang string) bool {
	_, ok := c.langs[lang]
	return ok
}

// Text renders key in lang, falling back to en_US and then to the key name.
// Placeholders missing from args render as the empty string; args not named
// by the template are ignored. Substitution is single-pass, so a value that
// itself contains "{x}" is never expanded.
func (c *Catalog) Text(lang, key string, args map[string]string) string {
	tmpl, ok := c.langs[lang][key]
	if !ok {
		tmpl, ok = c.langs[EnUS][key]
	}
	if !ok {
		return key
	}
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		return args[m[1:len(m)-1]]
	})
}
