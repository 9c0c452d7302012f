package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the image build against the deployment policy: pinned
// base images, a static -trimpath build of each binary chosen by SERVICE, and
// a final stage that runs as an unprivileged user.
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
	var final, user string
	for _, l := range lines {
		fields := strings.Fields(l)
		switch strings.ToUpper(fields[0]) {
		case "ARG":
			if name, def, ok := strings.Cut(fields[1], "="); ok {
				args[name] = def
			}
		case "FROM":
			image := fields[1]
			if sm := regexp.MustCompile(`^\$\{(\w+)\}$`).FindStringSubmatch(image); sm != nil {
				image = args[sm[1]]
			}
			if image != "scratch" && !stages[image] {
				if err := checkImage(image); err != nil {
					t.Errorf("FROM %s: %v", fields[1], err)
				}
			}
			if len(fields) == 4 && strings.EqualFold(fields[2], "AS") {
				stages[fields[3]] = true
			}
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
	for _, want := range []string{
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
