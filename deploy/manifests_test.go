package deploy

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// namespace is where everything runs.
const namespace = "langbot"

// services are the three plugin services, each a Deployment, a Service, a
// ServiceAccount, a PodDisruptionBudget and a NATS user of that name.
var services = []string{"githubkit", "takeover", "schenotify"}

// requiredEnv is the environment every service binary reads (the lead's
// contract), plus the per-service extras.
var requiredEnv = []string{
	"NATS_URL", "NATS_USER", "NATS_PASSWORD",
	"LANGBOT_SUBJECT_PREFIX", "LANGBOT_HTTP_ADDR", "LANGBOT_JS_REPLICAS",
	"LANGBOT_STATE_KEY", "LANGBOT_WORKERS", "LANGBOT_LOG_LEVEL",
	"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_RESOURCE_ATTRIBUTES",
}

var extraEnv = map[string][]string{
	"githubkit": {"GITHUB_API_URL"},
	"takeover":  {"LANGBOT_CONSOLE_KEY"},
}

// want describes what differs between overlays.
type want struct {
	natsReplicas int32
	jsReplicas   string
	hpa          bool   // services autoscaled (no replicas in the Deployment)
	otlpEndpoint string // "" when traces are not exported by default
	secrets      bool   // the overlay generates the Secrets itself
}

var wants = map[string]want{
	"dev":  {natsReplicas: 1, jsReplicas: "1", otlpEndpoint: "http://jaeger:4318", secrets: true},
	"prod": {natsReplicas: 3, jsReplicas: "3", hpa: true},
}

func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	good := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n    - port: 80\n"
	if _, err := decodeObject("v1/Service", []byte(good)); err != nil {
		t.Fatalf("valid Service: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":   strings.Replace(good, "port: 80", "port: 80\n      prot: TCP", 1),
		"misplaced field": strings.Replace(good, "spec:", "spec:\n  replicas: 2", 1),
		"duplicate key":   strings.Replace(good, "name: x", "name: x\n  name: y", 1),
		"wrong type":      strings.Replace(good, "port: 80", "port: eighty", 1),
	} {
		if _, err := decodeObject("v1/Service", []byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if _, err := decodeObject("v1/Pod", []byte(good)); err == nil {
		t.Error("unexpected kind decoded without error")
	}
}

func TestBaseRenders(t *testing.T) {
	m := render(t, "k8s/base")
	for _, s := range services {
		if d := m.deployments[s]; d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			t.Errorf("base: Deployment %s must run 2 replicas", s)
		}
	}
	if ss := m.statefulSets["nats"]; ss == nil || ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Error("base: NATS must be a StatefulSet of 3")
	}
}

func TestOverlayPolicy(t *testing.T) {
	docs := documentedSecrets(t)
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			m := render(t, "k8s/overlays/"+overlay)
			w := wants[overlay]
			t.Run("objects", func(t *testing.T) { checkObjects(t, m) })
			t.Run("pods", func(t *testing.T) { checkPods(t, m) })
			t.Run("services", func(t *testing.T) { checkServices(t, m, w) })
			t.Run("secrets", func(t *testing.T) { checkSecrets(t, m, w, docs) })
			t.Run("nats", func(t *testing.T) { checkNATS(t, m, w) })
			t.Run("setup", func(t *testing.T) { checkSetupJob(t, m) })
			t.Run("network", func(t *testing.T) { checkNetwork(t, m, w) })
			if w.otlpEndpoint != "" {
				t.Run("tracing", func(t *testing.T) { checkTracing(t, m, w) })
			}
		})
	}
}

// checkObjects: namespace, labels.
func checkObjects(t *testing.T, m *manifest) {
	ns := m.namespaces[namespace]
	if ns == nil {
		t.Fatalf("no Namespace %s", namespace)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace: pod security %q, want restricted", got)
	}
	for _, obj := range m.objects {
		meta := objectMeta(obj)
		if _, isNS := obj.(*corev1.Namespace); !isNS && meta.Namespace != namespace {
			t.Errorf("%T %s: namespace %q, want %q", obj, meta.Name, meta.Namespace, namespace)
		}
		if meta.Labels["app.kubernetes.io/part-of"] != "langbot" {
			t.Errorf("%T %s: missing label app.kubernetes.io/part-of=langbot", obj, meta.Name)
		}
	}
}

// workload is one pod template and whether it runs for good (probes).
type workload struct {
	kind, name  string
	pod         *corev1.PodTemplateSpec
	longRunning bool
}

func (m *manifest) workloads() []workload {
	var ws []workload
	for n, d := range m.deployments {
		ws = append(ws, workload{"Deployment", n, &d.Spec.Template, true})
	}
	for n, s := range m.statefulSets {
		ws = append(ws, workload{"StatefulSet", n, &s.Spec.Template, true})
	}
	for n, j := range m.jobs {
		ws = append(ws, workload{"Job", n, &j.Spec.Template, false})
	}
	slices.SortFunc(ws, func(a, b workload) int { return strings.Compare(a.kind+a.name, b.kind+b.name) })
	return ws
}

// checkPods: non-root, read-only, no privileges, pinned images, resources,
// probes, service accounts.
func checkPods(t *testing.T, m *manifest) {
	if len(m.workloads()) == 0 {
		t.Fatal("no workloads")
	}
	for _, w := range m.workloads() {
		id := w.kind + " " + w.name
		spec := &w.pod.Spec
		psc := spec.SecurityContext
		switch {
		case psc == nil:
			t.Errorf("%s: no pod securityContext", id)
		case psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
			t.Errorf("%s: runAsNonRoot is not true", id)
		case psc.RunAsUser == nil || *psc.RunAsUser == 0:
			t.Errorf("%s: runAsUser must be a non-zero uid", id)
		case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("%s: seccomp profile must be RuntimeDefault", id)
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken must be false", id)
		}
		if sa := m.serviceAccounts[spec.ServiceAccountName]; spec.ServiceAccountName == "" || sa == nil {
			t.Errorf("%s: service account %q does not exist", id, spec.ServiceAccountName)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: uses host namespaces", id)
		}
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			cid := id + " container " + c.Name
			if err := checkImage(c.Image); err != nil {
				t.Errorf("%s: %v", cid, err)
			}
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s: no securityContext", cid)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s: allowPrivilegeEscalation is not false", cid)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s: root filesystem is not read-only", cid)
			case sc.Privileged != nil && *sc.Privileged:
				t.Errorf("%s: privileged", cid)
			case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
				t.Errorf("%s: capabilities must drop ALL and add none", cid)
			case sc.RunAsUser != nil && *sc.RunAsUser == 0:
				t.Errorf("%s: runs as root", cid)
			}
			checkResources(t, cid, c.Resources)
			checkTZ(t, m, cid, c)
			if w.longRunning {
				for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
					if p == nil || p.HTTPGet == nil {
						t.Errorf("%s: no HTTP %s probe", cid, name)
					} else if !hasPort(c, p.HTTPGet.Port) {
						t.Errorf("%s: %s probe port %s is not a container port", cid, name, p.HTTPGet.Port.String())
					}
				}
			}
		}
	}
}

// imageRef splits an image reference into repository, tag and digest.
var imageRef = regexp.MustCompile(`^([a-z0-9.-]+(?::[0-9]+)?/)?([a-z0-9._/-]+)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[0-9a-f]{64}))?$`)

func checkImage(image string) error {
	sm := imageRef.FindStringSubmatch(image)
	if sm == nil {
		return fmt.Errorf("image %q is not a valid reference", image)
	}
	tag := sm[3]
	if tag == "" {
		return fmt.Errorf("image %q has no tag", image)
	}
	if tag == "latest" || !regexp.MustCompile(`[0-9]`).MatchString(tag) {
		return fmt.Errorf("image %q: tag %q is not a pinned version", image, tag)
	}
	return nil
}

func TestCheckImage(t *testing.T) {
	for image, ok := range map[string]bool{
		"nats:2.15.2-alpine":                   true,
		"ghcr.io/langbot-nats/githubkit:0.1.0": true,
		"localhost:5000/x/y:1.2":               true,
		"nats":                                 false,
		"nats:latest":                          false,
		"ghcr.io/langbot-nats/githubkit":       false,
		"ghcr.io/langbot-nats/githubkit:main":  false,
		"localhost:5000/x/y":                   false,
		"jaegertracing/all-in-one:1.76.0@sha256:" + strings.Repeat("a", 64): true,
	} {
		if err := checkImage(image); (err == nil) != ok {
			t.Errorf("checkImage(%q) = %v, want ok=%v", image, err, ok)
		}
	}
}

func checkResources(t *testing.T, id string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r.Requests[name]; !ok || q.Sign() <= 0 {
			t.Errorf("%s: no %s request", id, name)
		}
	}
	lim, ok := r.Limits[corev1.ResourceMemory]
	if !ok || lim.Sign() <= 0 {
		t.Errorf("%s: no memory limit", id)
		return
	}
	if req := r.Requests[corev1.ResourceMemory]; req.Cmp(lim) > 0 {
		t.Errorf("%s: memory request %s above limit %s", id, req.String(), lim.String())
	}
}

func hasPort(c corev1.Container, p intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return true
		}
	}
	return false
}

// envOf resolves a container's env to values: literals as is, ConfigMap keys
// looked up (failing if the map or key is missing), Secret keys and field
// references as placeholders. It fails on duplicates and on $(VAR)
// references to variables not defined before.
func envOf(t *testing.T, m *manifest, id string, c corev1.Container) map[string]corev1.EnvVar {
	t.Helper()
	if len(c.EnvFrom) > 0 {
		t.Errorf("%s: envFrom hides which variables are set; list them in env", id)
	}
	env := map[string]corev1.EnvVar{}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: %s set twice", id, e.Name)
		}
		for _, sm := range ref.FindAllStringSubmatch(e.Value, -1) {
			if _, ok := env[sm[1]]; !ok {
				t.Errorf("%s: %s refers to $(%s), not defined before it", id, e.Name, sm[1])
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			r := e.ValueFrom.ConfigMapKeyRef
			cm := m.configMaps[r.Name]
			if cm == nil {
				t.Errorf("%s: %s: ConfigMap %s does not exist", id, e.Name, r.Name)
			} else if v, ok := cm.Data[r.Key]; !ok {
				t.Errorf("%s: %s: ConfigMap %s has no key %s", id, e.Name, r.Name, r.Key)
			} else {
				e = corev1.EnvVar{Name: e.Name, Value: v, ValueFrom: e.ValueFrom}
			}
		}
		env[e.Name] = e
	}
	return env
}

// checkServices: the three plugin Deployments, their env, probes, PDBs,
// Services, spread and scaling.
func checkServices(t *testing.T, m *manifest, w want) {
	for _, s := range services {
		d := m.deployments[s]
		if d == nil {
			t.Errorf("no Deployment %s", s)
			continue
		}
		pod := d.Spec.Template
		if len(pod.Spec.Containers) != 1 {
			t.Fatalf("Deployment %s: want one container, got %d", s, len(pod.Spec.Containers))
		}
		c := pod.Spec.Containers[0]
		id := "Deployment " + s
		if !strings.HasPrefix(c.Image, "ghcr.io/langbot-nats/"+s+":") {
			t.Errorf("%s: image %s is not the %s image", id, c.Image, s)
		}

		env := envOf(t, m, id, c)
		for _, name := range slices.Concat(requiredEnv, extraEnv[s]) {
			if _, ok := env[name]; !ok {
				t.Errorf("%s: environment lacks %s", id, name)
			}
		}
		if w.otlpEndpoint != "" {
			if got := env["OTEL_EXPORTER_OTLP_ENDPOINT"].Value; got != w.otlpEndpoint {
				t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q, want %q", id, got, w.otlpEndpoint)
			}
		} else if _, ok := env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ok {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT set; this overlay exports no traces by default", id)
		}
		literal := map[string]string{
			"NATS_USER":              s,
			"NATS_URL":               "nats://nats:4222",
			"LANGBOT_SUBJECT_PREFIX": "langbot",
			"LANGBOT_HTTP_ADDR":      ":8080",
			"LANGBOT_METRICS_ADDR":   ":9090",
			"LANGBOT_JS_REPLICAS":    w.jsReplicas,
			"OTEL_SERVICE_NAME":      s,
		}
		for name, v := range literal {
			if got := env[name].Value; got != v {
				t.Errorf("%s: %s = %q, want %q", id, name, got, v)
			}
		}
		secretRefs := map[string][2]string{
			"NATS_PASSWORD":     {"langbot-nats-auth", s + "-password"},
			"LANGBOT_STATE_KEY": {"langbot-state-keys", s},
		}
		if s == "takeover" {
			secretRefs["LANGBOT_CONSOLE_KEY"] = [2]string{"langbot-takeover-console", "console-key"}
		}
		for name, ref := range secretRefs {
			e := env[name]
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: %s must come from a Secret", id, name)
				continue
			}
			r := e.ValueFrom.SecretKeyRef
			if baseName(r.Name) != ref[0] || r.Key != ref[1] {
				t.Errorf("%s: %s from Secret %s key %s, want %s key %s", id, name, r.Name, r.Key, ref[0], ref[1])
			}
		}
		if n, ok := quantityOf(env["LANGBOT_WORKERS"].Value); !ok || n < 1 {
			t.Errorf("%s: LANGBOT_WORKERS = %q, want a positive integer", id, env["LANGBOT_WORKERS"].Value)
		}

		// Probes on the metrics port (LANGBOT_METRICS_ADDR), apart from
		// the console's and the webhook's; Prometheus scrapes it too.
		if !hasPort(c, intstr.FromString("http")) || c.Ports[0].ContainerPort != 8080 {
			t.Errorf("%s: container port http must be 8080 (LANGBOT_HTTP_ADDR)", id)
		}
		if !hasPort(c, intstr.FromString("metrics")) || c.Ports[1].ContainerPort != 9090 {
			t.Errorf("%s: container port metrics must be 9090 (LANGBOT_METRICS_ADDR)", id)
		}
		if got := d.Spec.Template.Annotations["prometheus.io/port"]; got != "9090" {
			t.Errorf("%s: prometheus.io/port = %q, want the metrics port 9090", id, got)
		}
		for name, p := range map[string]struct {
			probe *corev1.Probe
			path  string
		}{"startup": {c.StartupProbe, "/healthz"}, "liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "metrics" {
				t.Errorf("%s: %s probe must GET %s on port metrics", id, name, p.path)
			}
		}

		// Replicas: 2 in the Deployment, or owned by an HPA.
		hpa := m.hpas[s]
		if w.hpa {
			if d.Spec.Replicas != nil {
				t.Errorf("%s: replicas set although an HPA scales it", id)
			}
			if hpa == nil || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != s {
				t.Errorf("%s: no HorizontalPodAutoscaler targets it", id)
			} else if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas <= *hpa.Spec.MinReplicas {
				t.Errorf("HPA %s: replicas must range from at least 2 upwards", s)
			}
		} else {
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("%s: want 2 replicas", id)
			}
			if hpa != nil {
				t.Errorf("HPA %s in an overlay without autoscaling", s)
			}
		}

		if len(pod.Spec.TopologySpreadConstraints) == 0 {
			t.Errorf("%s: no topology spread constraints", id)
		}
		for _, tsc := range pod.Spec.TopologySpreadConstraints {
			if !selects(t, tsc.LabelSelector, pod.Labels) {
				t.Errorf("%s: a topology spread constraint does not select its own pods", id)
			}
		}
		if pdb := m.pdbs[s]; pdb == nil || !selects(t, pdb.Spec.Selector, pod.Labels) {
			t.Errorf("%s: no PodDisruptionBudget selects its pods", id)
		} else if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
			t.Errorf("PDB %s: neither minAvailable nor maxUnavailable", s)
		}
		if !selects(t, d.Spec.Selector, pod.Labels) {
			t.Errorf("%s: selector does not match its template", id)
		}
		svc := m.services[s]
		if svc == nil || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
			t.Errorf("%s: no Service selects its pods", id)
		} else if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
			t.Errorf("Service %s: must target port http", s)
		}
	}
}

// checkTZ: every container takes TZ from langbot-config, the one setting
// of the installation's zone, and it names a zone Go can load.
func checkTZ(t *testing.T, m *manifest, cid string, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name != "TZ" {
			continue
		}
		r := (*corev1.ConfigMapKeySelector)(nil)
		if e.ValueFrom != nil {
			r = e.ValueFrom.ConfigMapKeyRef
		}
		if r == nil || baseName(r.Name) != "langbot-config" || r.Key != "TZ" {
			t.Errorf("%s: TZ must come from ConfigMap langbot-config key TZ", cid)
			return
		}
		cm := m.configMaps[r.Name]
		if cm == nil {
			t.Errorf("%s: TZ: ConfigMap %s does not exist", cid, r.Name)
			return
		}
		if _, err := time.LoadLocation(cm.Data["TZ"]); err != nil || cm.Data["TZ"] == "" || cm.Data["TZ"] == "Local" {
			t.Errorf("%s: TZ %q is not an IANA zone", cid, cm.Data["TZ"])
		}
		return
	}
	t.Errorf("%s: no TZ (from ConfigMap langbot-config key TZ)", cid)
}

func quantityOf(s string) (int64, bool) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false
	}
	return q.AsInt64()
}

func selects(t *testing.T, ls *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	if ls == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Errorf("label selector: %v", err)
		return false
	}
	return !sel.Empty() && sel.Matches(labels.Set(podLabels))
}

// hashSuffix is the content hash kustomize appends to generated names.
var hashSuffix = regexp.MustCompile(`-[a-z0-9]{10}$`)

func baseName(name string) string { return hashSuffix.ReplaceAllString(name, "") }

// secretRef is one Secret key a pod reads.
type secretRef struct{ secret, key string }

// documentedSecrets reads the Secret table of docs/operations.md: rows whose
// first two cells are a backquoted Secret name and key.
func documentedSecrets(t *testing.T) map[secretRef]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatalf("operations guide: %v", err)
	}
	row := regexp.MustCompile("^\\|\\s*`(langbot-[a-z0-9-]+)`\\s*\\|\\s*`([a-z0-9_-]+)`\\s*\\|")
	docs := map[secretRef]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if sm := row.FindStringSubmatch(line); sm != nil {
			docs[secretRef{sm[1], sm[2]}] = true
		}
	}
	if len(docs) == 0 {
		t.Fatal("docs/operations.md documents no Secret keys")
	}
	return docs
}

// checkSecrets: every Secret key a pod reads is documented; overlays that
// generate Secrets hold every key with a well-formed value; no documented
// key is unused.
func checkSecrets(t *testing.T, m *manifest, w want, docs map[secretRef]bool) {
	used := map[secretRef]bool{}
	for _, wl := range m.workloads() {
		for _, c := range slices.Concat(wl.pod.Spec.InitContainers, wl.pod.Spec.Containers) {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				r := e.ValueFrom.SecretKeyRef
				ref := secretRef{baseName(r.Name), r.Key}
				used[ref] = true
				if !docs[ref] {
					t.Errorf("%s %s: Secret %s key %s is not documented in docs/operations.md", wl.kind, wl.name, ref.secret, ref.key)
				}
				if r.Optional != nil && *r.Optional {
					t.Errorf("%s %s: Secret key %s/%s must not be optional", wl.kind, wl.name, ref.secret, ref.key)
				}
				if !w.secrets {
					if _, generated := m.secrets[r.Name]; generated {
						t.Errorf("Secret %s is generated in an overlay whose Secrets the operator creates", r.Name)
					}
					continue
				}
				s := m.secrets[r.Name]
				if s == nil {
					t.Errorf("%s %s: Secret %s does not exist", wl.kind, wl.name, r.Name)
					continue
				}
				v, ok := s.Data[r.Key]
				if !ok {
					t.Errorf("%s %s: Secret %s has no key %s", wl.kind, wl.name, r.Name, r.Key)
					continue
				}
				if err := checkSecretValue(ref, string(v)); err != nil {
					t.Errorf("Secret %s key %s: %v", ref.secret, ref.key, err)
				}
			}
		}
	}
	for ref := range docs {
		if !used[ref] {
			t.Errorf("docs/operations.md documents Secret %s key %s, which nothing reads", ref.secret, ref.key)
		}
	}
}

// passwordForm is what a NATS password must look like: the config parser
// reads environment values as config text (see accounts.conf).
var passwordForm = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{15,}$`)

func checkSecretValue(ref secretRef, v string) error {
	switch {
	case strings.HasSuffix(ref.key, "-password"):
		if !passwordForm.MatchString(v) {
			return fmt.Errorf("password does not match %s", passwordForm)
		}
		parsed, err := conf.Parse("password: " + v)
		if err != nil || parsed["password"] != v {
			return fmt.Errorf("the NATS config parser does not read the password back as the same string")
		}
	case ref.secret == "langbot-state-keys":
		return checkKeyring(v)
	case ref.key == "console-key":
		k, err := decodeBase64(v)
		if err != nil || len(k) < 32 {
			return fmt.Errorf("console key must be base64 of at least 32 bytes")
		}
	}
	return nil
}

// checkKeyring checks the LANGBOT_STATE_KEY form: <id>=<base64 32 bytes>[,...].
func checkKeyring(v string) error {
	ids := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		id, key, ok := strings.Cut(part, "=")
		if !ok || !regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`).MatchString(id) {
			return fmt.Errorf("keyring entry without a valid id")
		}
		if ids[id] {
			return fmt.Errorf("keyring id %s twice", id)
		}
		ids[id] = true
		k, err := decodeBase64(key)
		if err != nil || len(k) != 32 {
			return fmt.Errorf("keyring key %s is not base64 of 32 bytes", id)
		}
	}
	return nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64")
}

func TestCheckSecretValue(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, c := range []struct {
		ref secretRef
		v   string
		ok  bool
	}{
		{secretRef{"langbot-nats-auth", "host-password"}, "pw0123456789abcdef", true},
		{secretRef{"langbot-nats-auth", "host-password"}, "1234567890123456", false},
		{secretRef{"langbot-nats-auth", "host-password"}, "short", false},
		{secretRef{"langbot-nats-auth", "host-password"}, "pw0123456789abc;def", false},
		{secretRef{"langbot-state-keys", "githubkit"}, "k1=" + key, true},
		{secretRef{"langbot-state-keys", "githubkit"}, "k2=" + key + ",k1=" + key, true},
		{secretRef{"langbot-state-keys", "githubkit"}, "k1=" + key + ",k1=" + key, false},
		{secretRef{"langbot-state-keys", "githubkit"}, key, false},
		{secretRef{"langbot-state-keys", "githubkit"}, "k1=" + base64.StdEncoding.EncodeToString(make([]byte, 16)), false},
		{secretRef{"langbot-takeover-console", "console-key"}, key, true},
		{secretRef{"langbot-takeover-console", "console-key"}, "c2hvcnQ=", false},
	} {
		if err := checkSecretValue(c.ref, c.v); (err == nil) != c.ok {
			t.Errorf("checkSecretValue(%v, %q) = %v, want ok=%v", c.ref, c.v, err, c.ok)
		}
	}
}

// checkNATS: the StatefulSet, its configuration (parsed by the server's own
// parser), and that its environment supplies every variable the
// configuration reads, from the same Secret keys the clients use.
func checkNATS(t *testing.T, m *manifest, w want) {
	ss := m.statefulSets["nats"]
	if ss == nil {
		t.Fatal("no StatefulSet nats")
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != w.natsReplicas {
		t.Errorf("nats: replicas %v, want %d", ss.Spec.Replicas, w.natsReplicas)
	}
	if ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Error("nats: pods must start in parallel so the cluster can form")
	}
	headless := m.services[ss.Spec.ServiceName]
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("nats: serviceName %q must be a headless Service publishing not-ready addresses", ss.Spec.ServiceName)
	}
	if client := m.services["nats"]; client == nil || client.Spec.Ports[0].Port != 4222 {
		t.Error("nats: no client Service nats on port 4222")
	}
	if pdb := m.pdbs["nats"]; pdb == nil || !selects(t, pdb.Spec.Selector, ss.Spec.Template.Labels) {
		t.Error("nats: no PodDisruptionBudget")
	}
	c := ss.Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz?js-server-only=true" {
		t.Error("nats: readiness must be /healthz?js-server-only=true")
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Fatal("nats: want one volume claim template")
	}
	pvc := ss.Spec.VolumeClaimTemplates[0]
	var dataMount string
	for _, vm := range c.VolumeMounts {
		if vm.Name == pvc.Name {
			dataMount = vm.MountPath
		}
	}
	if dataMount == "" {
		t.Fatal("nats: the volume claim is not mounted")
	}

	// The accounts are the ones the permission test proves.
	shipped, err := os.ReadFile(filepath.Join("k8s", "base", "nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if cm := m.configMapByPrefix(t, "nats-config"); cm.Data["accounts.conf"] != string(shipped) {
		t.Error("nats: the ConfigMap's accounts.conf differs from k8s/base/nats/accounts.conf")
	}

	// Environment: every variable the config reads, passwords from the
	// same Secret keys as the clients'.
	env := envOf(t, m, "StatefulSet nats", c)
	cm := m.configMapByPrefix(t, "nats-config")
	vars := regexp.MustCompile(`(?m)^[^#"]*\$([A-Z_][A-Z0-9_]*)`)
	for _, file := range []string{"nats.conf", "accounts.conf"} {
		for _, sm := range vars.FindAllStringSubmatch(cm.Data[file], -1) {
			if _, ok := env[sm[1]]; !ok {
				t.Errorf("nats: %s reads $%s, which the StatefulSet does not set", file, sm[1])
			}
		}
	}
	for user, v := range natsUsers {
		e := env[v]
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("nats: %s must come from a Secret", v)
			continue
		}
		r := e.ValueFrom.SecretKeyRef
		if baseName(r.Name) != "langbot-nats-auth" || r.Key != user+"-password" {
			t.Errorf("nats: %s from %s/%s, want langbot-nats-auth/%s-password", v, r.Name, r.Key, user)
		}
	}

	// The configuration, parsed as the server parses it, with the
	// ConfigMap's files side by side as mounted.
	dir := t.TempDir()
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("POD_NAME", "nats-0")
	t.Setenv("JETSTREAM_KEY", "keyPlaceholder0123456789")
	t.Setenv("AUTH_ISSUER", "AAP3FWH5NDKL65E66UOBAAYX77AGTISYSLYXG54DJBK5UVUYUUCIKXDQ")
	for _, v := range natsUsers {
		t.Setenv(v, "pwPlaceholder0123456789")
	}
	cfg, err := conf.ParseFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("nats.conf: %v", err)
	}
	js, _ := cfg["jetstream"].(map[string]any)
	if js == nil {
		t.Fatal("nats.conf: no jetstream block")
	}
	if js["sync_interval"] != "always" {
		t.Errorf("nats.conf: sync_interval = %v, want always", js["sync_interval"])
	}
	if js["cipher"] != "chachapoly" || js["key"] != "keyPlaceholder0123456789" {
		t.Errorf("nats.conf: JetStream must be encrypted at rest with the key from $JETSTREAM_KEY; cipher %v", js["cipher"])
	}
	if sd, _ := js["store_dir"].(string); !strings.HasPrefix(sd, dataMount+"/") {
		t.Errorf("nats.conf: store_dir %q is not on the volume mounted at %s", sd, dataMount)
	}
	maxFile, _ := js["max_file_store"].(int64)
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if maxFile <= 0 || maxFile >= size.Value() {
		t.Errorf("nats.conf: max_file_store %d must be positive and below the volume size %s", maxFile, size.String())
	}
	// spec/takeover.md section 11: 32 MiB carries an event with an 8 MiB
	// inline image and a reply with two 10 MiB attachments in base64.
	mp, _ := cfg["max_payload"].(int64)
	if mp != 32<<20 {
		t.Errorf("nats.conf: max_payload %d, want 32 MiB", mp)
	}
	// issue 33: eight maximum-size messages in flight to one service
	// connection must not make the server drop it as a slow consumer
	// (bus.MaxPendingFor in the main module; docs/operations.md)
	if pend, _ := cfg["max_pending"].(int64); pend < 8*mp+64<<20 {
		t.Errorf("nats.conf: max_pending %d, want at least 8 x max_payload + 64 MiB = %d", pend, 8*mp+64<<20)
	}
	if _, ok := cfg["accounts"]; !ok {
		t.Error("nats.conf: accounts.conf is not included")
	}
	// The server's own option processing accepts it, with the settings
	// that matter.
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("nats.conf: the server refuses it: %v", err)
	}
	if !opts.JetStream || !opts.SyncAlways {
		t.Errorf("nats.conf: JetStream %v, SyncAlways %v; want both", opts.JetStream, opts.SyncAlways)
	}
	if opts.LameDuckDuration <= 0 || opts.PidFile == "" {
		t.Error("nats.conf: lame duck mode needs a duration and a pid file (preStop)")
	}
	if want := int(w.natsReplicas); w.natsReplicas > 1 && (len(opts.Routes) != want || opts.Cluster.Name == "") {
		t.Errorf("nats.conf: cluster %q with %d routes, want a named cluster with %d", opts.Cluster.Name, len(opts.Routes), want)
	}
	cluster, _ := cfg["cluster"].(map[string]any)
	switch {
	case w.natsReplicas == 1 && cluster != nil:
		t.Error("nats.conf: one node must not configure a cluster")
	case w.natsReplicas > 1:
		routes, _ := cluster["routes"].([]any)
		if len(routes) != int(w.natsReplicas) {
			t.Errorf("nats.conf: %d routes for %d nodes", len(routes), w.natsReplicas)
		}
		for i := range int(w.natsReplicas) {
			want := fmt.Sprintf("nats://nats-%d.%s:6222", i, ss.Spec.ServiceName)
			if !slices.Contains(routes, any(want)) {
				t.Errorf("nats.conf: no route %s", want)
			}
		}
	}
}

// checkSetupJob: lbctl setup runs as host with the configured replicas.
func checkSetupJob(t *testing.T, m *manifest) {
	j := m.jobs["langbot-setup"]
	if j == nil {
		t.Fatal("no Job langbot-setup")
	}
	c := j.Spec.Template.Spec.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/langbot-nats/lbctl:") {
		t.Errorf("setup: image %s is not lbctl", c.Image)
	}
	args := strings.Join(c.Args, " ")
	if strings.Contains(strings.ToLower(args), "password") {
		t.Errorf("setup: a password in the arguments shows in the process list: %q", args)
	}
	for _, want := range []string{"setup", "--nats=$(NATS_URL)", "--user=host", "--replicas=$(LANGBOT_JS_REPLICAS)"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("setup: args %q lack %q", args, want)
		}
	}
	env := envOf(t, m, "Job langbot-setup", c)
	if r := env["NATS_PASSWORD"].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Key != "host-password" {
		t.Error("setup: NATS_PASSWORD must be the host's")
	}
	if env["NATS_URL"].Value != "nats://nats:4222" {
		t.Errorf("setup: NATS_URL = %q", env["NATS_URL"].Value)
	}
	// The services' images and the setup image are one release.
	tag := func(image string) string { return image[strings.LastIndex(image, ":")+1:] }
	for _, s := range services {
		if d := m.deployments[s]; d != nil && tag(d.Spec.Template.Spec.Containers[0].Image) != tag(c.Image) {
			t.Errorf("setup: lbctl tag %s differs from %s's", tag(c.Image), s)
		}
	}
}

// checkNetwork: default deny, and the paths the system needs are open while
// others stay closed.
func checkNetwork(t *testing.T, m *manifest, w want) {
	dd := m.netpols["default-deny"]
	if dd == nil || len(dd.Spec.PodSelector.MatchLabels)+len(dd.Spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Contains(dd.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(dd.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Fatal("no default-deny policy for ingress and egress of every pod")
	}
	pods := map[string]map[string]string{}
	for _, wl := range m.workloads() {
		pods[wl.name] = wl.pod.Labels
	}
	type path struct {
		from, to string
		port     int32
		open     bool
	}
	paths := []path{
		{"langbot-setup", "nats", 4222, true},
		{"nats", "nats", 6222, true},
		{"githubkit", "nats", 6222, false},
		{"githubkit", "takeover", 8080, false},
		{"takeover", "githubkit", 8080, false},
	}
	for _, s := range services {
		paths = append(paths, path{s, "nats", 4222, true}, path{s, "nats", 8222, false})
		if w.otlpEndpoint != "" {
			paths = append(paths, path{s, "jaeger", 4318, true})
		}
	}
	// The console accepts any client (an ingress controller, a
	// port-forward): its bearer tokens protect it.
	if !ingressAllowed(t, m, map[string]string{"app": "ingress-controller"}, pods["takeover"], 8080) {
		t.Error("network: the takeover console is not reachable")
	}
	for _, p := range paths {
		from, to := pods[p.from], pods[p.to]
		if from == nil || to == nil {
			t.Errorf("network: no pods %s or %s", p.from, p.to)
			continue
		}
		open := egressAllowed(t, m, from, to, p.port) && ingressAllowed(t, m, from, to, p.port)
		if open != p.open {
			t.Errorf("network: %s -> %s:%d open=%v, want %v", p.from, p.to, p.port, open, p.open)
		}
	}
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil || (p.Port.Type == intstr.Int && p.Port.IntVal == port) {
			return true
		}
	}
	return false
}

// peerMatches reports whether a policy peer admits a pod of this namespace.
func peerMatches(t *testing.T, peers []networkingv1.NetworkPolicyPeer, podLabels map[string]string) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			continue // addresses outside the cluster; pod traffic is judged by selectors
		}
		if p.NamespaceSelector != nil {
			nsSel, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
			if err != nil || !nsSel.Matches(labels.Set{"kubernetes.io/metadata.name": namespace}) {
				continue
			}
		}
		if p.PodSelector == nil {
			return true
		}
		sel, err := metav1.LabelSelectorAsSelector(p.PodSelector)
		if err != nil {
			t.Errorf("network: %v", err)
			continue
		}
		if sel.Matches(labels.Set(podLabels)) {
			return true
		}
	}
	return false
}

func policySelects(np *networkingv1.NetworkPolicy, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	return err == nil && sel.Matches(labels.Set(podLabels))
}

func egressAllowed(t *testing.T, m *manifest, from, to map[string]string, port int32) bool {
	for _, np := range m.netpols {
		if !policySelects(np, from) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		for _, r := range np.Spec.Egress {
			if portMatches(r.Ports, port) && peerMatches(t, r.To, to) {
				return true
			}
		}
	}
	return false
}

func ingressAllowed(t *testing.T, m *manifest, from, to map[string]string, port int32) bool {
	for _, np := range m.netpols {
		if !policySelects(np, to) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		for _, r := range np.Spec.Ingress {
			if portMatches(r.Ports, port) && peerMatches(t, r.From, from) {
				return true
			}
		}
	}
	return false
}

// checkTracing: Jaeger runs and listens where the services export.
func checkTracing(t *testing.T, m *manifest, w want) {
	d := m.deployments["jaeger"]
	if d == nil {
		t.Fatal("no Deployment jaeger")
	}
	svc := m.services["jaeger"]
	if svc == nil {
		t.Fatal("no Service jaeger")
	}
	found := false
	for _, p := range svc.Spec.Ports {
		if fmt.Sprintf("http://%s:%d", svc.Name, p.Port) == w.otlpEndpoint && hasPort(d.Spec.Template.Spec.Containers[0], p.TargetPort) {
			found = true
		}
	}
	if !found {
		t.Errorf("Service jaeger does not serve %s", w.otlpEndpoint)
	}
	if cm := m.configMapByPrefix(t, "langbot-config"); cm.Data["OTEL_EXPORTER_OTLP_PROTOCOL"] != "http/protobuf" {
		t.Errorf("OTLP protocol %q, want http/protobuf for port 4318", cm.Data["OTEL_EXPORTER_OTLP_PROTOCOL"])
	}
}

// objectMeta returns the metadata of any decoded object.
func objectMeta(obj any) metav1.ObjectMeta {
	if o, ok := obj.(interface{ GetObjectMeta() metav1.Object }); ok {
		mo := o.GetObjectMeta()
		return metav1.ObjectMeta{Name: mo.GetName(), Namespace: mo.GetNamespace(), Labels: mo.GetLabels()}
	}
	panic(fmt.Sprintf("no metadata on %T", obj))
}

// TestOperationsGuideCoversEnvironment: every variable the services read is
// explained in docs/operations.md.
func TestOperationsGuideCoversEnvironment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Concat(requiredEnv, extraEnv["githubkit"], extraEnv["takeover"],
		[]string{"NATS_CREDS", "NATS_TLS_CA", "NATS_TLS_CERT", "NATS_TLS_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT"})
	for _, name := range names {
		if !regexp.MustCompile("(?m)^\\|[^|\\n]*`" + name + "`").Match(b) {
			t.Errorf("docs/operations.md: no configuration row for %s", name)
		}
	}
}
