package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the image build against the deployment policy: pinned
// base images, a static -trimpath build of each binary chosen by SERVICE,
// cross-compiled for the target platform (amd64 and arm64 images from one
// builder), and a final stage that runs as an unprivileged user.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	// Join continuation lines, drop comments.
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}

	args := map[string]string{}
	stages := map[string]bool{}
	// Per stage: its --platform and the ARGs it declares.
	platform := map[string]string{}
	stageArgs := map[string]map[string]bool{}
	var final, user, stage string
	for _, l := range lines {
		fields := strings.Fields(l)
		switch strings.ToUpper(fields[0]) {
		case "ARG":
			name, def, ok := strings.Cut(fields[1], "=")
			if ok {
				args[name] = def
			}
			if stage != "" {
				stageArgs[stage][name] = true
			}
		case "FROM":
			plat := ""
			if p, ok := strings.CutPrefix(fields[1], "--platform="); ok {
				plat, fields = p, append(fields[:1:1], fields[2:]...)
			}
			image := fields[1]
			if sm := regexp.MustCompile(`^\$\{(\w+)\}$`).FindStringSubmatch(image); sm != nil {
				image = args[sm[1]]
			}
			if image != "scratch" && !stages[image] {
				if err := checkImage(image); err != nil {
					t.Errorf("FROM %s: %v", fields[1], err)
				}
			}
			stage = image
			if len(fields) == 4 && strings.EqualFold(fields[2], "AS") {
				stages[fields[3]] = true
				stage = fields[3]
			}
			platform[stage], stageArgs[stage] = plat, map[string]bool{}
			final, user = image, ""
		case "USER":
			user = fields[1]
		}
	}
	if final != "scratch" && !strings.Contains(final, "distroless") {
		t.Errorf("final stage %s is neither scratch nor distroless", final)
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" || !regexp.MustCompile(`^[0-9]+$`).MatchString(uid) {
		t.Errorf("final stage USER %q, want a numeric non-root uid (runAsNonRoot needs a number)", user)
	}
	// Multi-platform images: the build stage runs on the builder's platform
	// and cross-compiles for the target one; the final stage is the
	// target's (no --platform).
	if platform["build"] != "$BUILDPLATFORM" {
		t.Errorf("build stage --platform=%q, want $BUILDPLATFORM (cross-compile, no emulation)", platform["build"])
	}
	if !stageArgs["build"]["TARGETOS"] || !stageArgs["build"]["TARGETARCH"] {
		t.Errorf("build stage does not declare ARG TARGETOS and TARGETARCH (it would build for the builder's platform)")
	}
	if platform[final] != "" {
		t.Errorf("final stage pins --platform=%s; it must be the target platform", platform[final])
	}
	for _, want := range []string{
		`CGO_ENABLED=0 GOOS="$TARGETOS" GOARCH="$TARGETARCH" go build`,
		"CGO_ENABLED=0", "-trimpath",
		`githubkit|takeover|schenotify) pkg="./services/${SERVICE}/cmd/${SERVICE}"`,
		`lbctl) pkg="./cmd/lbctl"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}

	ignore, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ignore), "\n") {
		l = strings.TrimSpace(l)
		for _, needed := range []string{"go.mod", "go.sum", "pkg", "services", "cmd"} {
			if l == needed || l == "*" || l == "**" {
				t.Errorf(".dockerignore excludes %s, which the build needs", needed)
			}
		}
	}
}
