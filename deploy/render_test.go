package deploy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// overlays are the kustomizations an operator deploys.
var overlays = []string{"dev", "prod"}

// manifest is one rendered overlay, decoded into typed objects.
type manifest struct {
	overlay string
	objects []any

	namespaces      map[string]*corev1.Namespace
	serviceAccounts map[string]*corev1.ServiceAccount
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	services        map[string]*corev1.Service
	deployments     map[string]*appsv1.Deployment
	statefulSets    map[string]*appsv1.StatefulSet
	jobs            map[string]*batchv1.Job
	pdbs            map[string]*policyv1.PodDisruptionBudget
	hpas            map[string]*autoscalingv2.HorizontalPodAutoscaler
	netpols         map[string]*networkingv1.NetworkPolicy
}

// kinds maps apiVersion/kind to a constructor of its typed struct. Any other
// kind in the output fails the render.
var kinds = map[string]func() any{
	"v1/Namespace":                           func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount":                      func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                           func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                              func() any { return new(corev1.Secret) },
	"v1/Service":                             func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                     func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                    func() any { return new(appsv1.StatefulSet) },
	"batch/v1/Job":                           func() any { return new(batchv1.Job) },
	"policy/v1/PodDisruptionBudget":          func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return new(networkingv1.NetworkPolicy) },
}

// render builds the kustomization in dir (relative to this package) with
// kustomize's Go API and decodes each object strictly: an unknown or
// misspelt field fails, as do duplicate keys and unknown kinds.
func render(t testing.TB, dir string) *manifest {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	m := &manifest{
		overlay:         filepath.Base(dir),
		namespaces:      map[string]*corev1.Namespace{},
		serviceAccounts: map[string]*corev1.ServiceAccount{},
		configMaps:      map[string]*corev1.ConfigMap{},
		secrets:         map[string]*corev1.Secret{},
		services:        map[string]*corev1.Service{},
		deployments:     map[string]*appsv1.Deployment{},
		statefulSets:    map[string]*appsv1.StatefulSet{},
		jobs:            map[string]*batchv1.Job{},
		pdbs:            map[string]*policyv1.PodDisruptionBudget{},
		hpas:            map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		netpols:         map[string]*networkingv1.NetworkPolicy{},
	}
	for _, r := range resMap.Resources() {
		gvk := r.GetGvk()
		var key string
		if gvk.Group != "" {
			key = gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
		} else {
			key = gvk.Version + "/" + gvk.Kind
		}
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeObject(key, b)
		if err != nil {
			t.Fatalf("%s: %s %s: %v", dir, key, r.GetName(), err)
		}
		if err := m.add(obj); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	return m
}

// decodeObject decodes one object of the given apiVersion/kind strictly into
// its Kubernetes API type.
func decodeObject(key string, b []byte) (any, error) {
	newObj, ok := kinds[key]
	if !ok {
		return nil, fmt.Errorf("unexpected kind %s", key)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(b, obj); err != nil {
		return nil, fmt.Errorf("does not decode strictly: %w", err)
	}
	return obj, nil
}

func (m *manifest) add(obj any) error {
	m.objects = append(m.objects, obj)
	var name string
	var dup bool
	switch o := obj.(type) {
	case *corev1.Namespace:
		name, dup = o.Name, put(m.namespaces, o.Name, o)
	case *corev1.ServiceAccount:
		name, dup = o.Name, put(m.serviceAccounts, o.Name, o)
	case *corev1.ConfigMap:
		name, dup = o.Name, put(m.configMaps, o.Name, o)
	case *corev1.Secret:
		name, dup = o.Name, put(m.secrets, o.Name, o)
	case *corev1.Service:
		name, dup = o.Name, put(m.services, o.Name, o)
	case *appsv1.Deployment:
		name, dup = o.Name, put(m.deployments, o.Name, o)
	case *appsv1.StatefulSet:
		name, dup = o.Name, put(m.statefulSets, o.Name, o)
	case *batchv1.Job:
		name, dup = o.Name, put(m.jobs, o.Name, o)
	case *policyv1.PodDisruptionBudget:
		name, dup = o.Name, put(m.pdbs, o.Name, o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		name, dup = o.Name, put(m.hpas, o.Name, o)
	case *networkingv1.NetworkPolicy:
		name, dup = o.Name, put(m.netpols, o.Name, o)
	}
	if dup {
		return fmt.Errorf("%T %s appears twice", obj, name)
	}
	return nil
}

func put[T any](m map[string]T, name string, v T) (dup bool) {
	_, dup = m[name]
	m[name] = v
	return dup
}

// configMapByPrefix returns the one ConfigMap whose generated name starts
// with name (kustomize appends a content hash).
func (m *manifest) configMapByPrefix(t testing.TB, name string) *corev1.ConfigMap {
	t.Helper()
	var found *corev1.ConfigMap
	for n, cm := range m.configMaps {
		if n == name || strings.HasPrefix(n, name+"-") {
			if found != nil {
				t.Fatalf("%s: two ConfigMaps named %s", m.overlay, name)
			}
			found = cm
		}
	}
	if found == nil {
		t.Fatalf("%s: no ConfigMap %s", m.overlay, name)
	}
	return found
}
