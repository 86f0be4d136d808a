// loader fills one namespace of a local control plane with a large, realistic set
// of objects for benchmarks and scale tests: Deployments (server-side applied by
// "gitops", some scaled by "hpa-controller", some annotated by "annotator") with
// their ReplicaSets and Pods carrying proper ownerReferences, Leases (and
// node-style Leases in kube-node-lease), PodDisruptionBudgets, and a CRD whose
// custom resources each own a ConfigMap. Writes are concurrent. Idempotent:
// objects that exist are counted, not recreated. Prints what it created.
//
// The cluster should run kube-controller-manager without the deployment and
// replicaset controllers (up.sh: COORD_KCM_CONTROLLERS), so they do not race the
// loader. Pods name a scheduler that does not exist, so nothing tries to place them,
// unless -nodes N binds them (spec.nodeName) round-robin to kwok-node-0..N-1, whose
// kwok then takes them to Running as kubelets would.
//
//	loader -kubeconfig F -namespace NS [-deployments 2000 -pods-per-rs 10 -leases 4000
//	       -node-leases 1000 -pdbs 200 -widgets 5000 -nodes 0 -workers 16]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	ctx     = context.Background()
	created = map[string]*atomic.Int64{}
	existed = map[string]*atomic.Int64{}
	kinds   = []string{"Deployment", "ReplicaSet", "Pod", "BarePod", "Lease", "NodeLease", "PodDisruptionBudget", "Widget", "ConfigMap"}
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	ns := flag.String("namespace", "coord-bench", "namespace to fill")
	deployments := flag.Int("deployments", 2000, "Deployments, each with one ReplicaSet")
	podsPerRS := flag.Int("pods-per-rs", 10, "Pods per ReplicaSet")
	leases := flag.Int("leases", 4000, "Leases in the namespace")
	nodeLeases := flag.Int("node-leases", 1000, "node-style Leases in kube-node-lease")
	pdbs := flag.Int("pdbs", 200, "PodDisruptionBudgets")
	widgets := flag.Int("widgets", 5000, "custom resources, each owning a ConfigMap")
	nodeLeaseAge := flag.Duration("node-lease-age", 0, "how long ago node-style Leases were last renewed (expired ones have no Node)")
	barePods := flag.Int("bare-pods", 0, "Pods owned by nothing (safe beside running deployment and replicaset controllers)")
	nodes := flag.Int("nodes", 0, "bind pods round-robin to kwok-node-0..N-1 (0: leave them unscheduled)")
	workers := flag.Int("workers", 16, "concurrent writers")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check(err)
	config.UserAgent = "coord-bench-loader"
	config.QPS, config.Burst = 10000, 10000
	client := kubernetes.NewForConfigOrDie(config)
	dyn := dynamic.NewForConfigOrDie(config)
	for _, k := range kinds {
		created[k], existed[k] = &atomic.Int64{}, &atomic.Int64{}
	}
	start := time.Now()
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: *ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		check(err)
	}

	// Deployments, then their ReplicaSets, then the Pods: each needs its owner's uid.
	rsUIDs := make([]types.UID, *deployments)
	parallel(*workers, *deployments, func(i int) error {
		uid, err := deployment(client, *ns, i, *podsPerRS)
		if err != nil {
			return err
		}
		rsUID, err := replicaSet(client, *ns, i, *podsPerRS, uid)
		rsUIDs[i] = rsUID
		return err
	})
	parallel(*workers, *deployments**podsPerRS, func(j int) error {
		return pod(client, *ns, j / *podsPerRS, j%*podsPerRS, rsUIDs[j / *podsPerRS], nodeFor(j, *nodes))
	})
	parallel(*workers, *barePods, func(i int) error { return barePod(client, *ns, i, nodeFor(i, *nodes)) })
	parallel(*workers, *leases, func(i int) error {
		return lease(client, *ns, "Lease", fmt.Sprintf("lock-%05d", i), fmt.Sprintf("app-%05d-rs-00_%d", i%max(*deployments, 1), i), 0)
	})
	parallel(*workers, *nodeLeases, func(i int) error {
		name := fmt.Sprintf("bench-node-%05d", i)
		return lease(client, "kube-node-lease", "NodeLease", name, name, *nodeLeaseAge)
	})
	parallel(*workers, *pdbs, func(i int) error { return pdb(client, *ns, i, *deployments) })
	if *widgets > 0 {
		gvr := widgetCRD(dyn)
		// One root Widget owns every other: a tree with thousands of dependents.
		root, err := widget(client, dyn, gvr, *ns, "w-root", nil, 0)
		check(err)
		owner := []metav1.OwnerReference{{APIVersion: "bench.coord.test/v1", Kind: "Widget", Name: "w-root", UID: root}}
		parallel(*workers, *widgets, func(i int) error {
			_, err := widget(client, dyn, gvr, *ns, fmt.Sprintf("w-%05d", i), owner, i)
			return err
		})
	}
	total := int64(0)
	for _, k := range kinds {
		fmt.Printf("%-20s created %6d  already there %6d\n", k, created[k].Load(), existed[k].Load())
		total += created[k].Load()
	}
	fmt.Printf("%d objects created in %.1fs\n", total, time.Since(start).Seconds())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loader:", err)
		os.Exit(1)
	}
}

// parallel runs f(0..n-1) on `workers` goroutines and stops the program on the first error.
func parallel(workers, n int, f func(int) error) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				check(f(i))
			}
		}()
	}
	wg.Wait()
}

// count records a create; an AlreadyExists is counted as existing, not an error.
func count(kind string, err error) (bool, error) {
	switch {
	case err == nil:
		created[kind].Add(1)
		return true, nil
	case apierrors.IsAlreadyExists(err):
		existed[kind].Add(1)
		return false, nil
	}
	return false, err
}

func labels(i int) map[string]string {
	return map[string]string{"app": fmt.Sprintf("app-%05d", i), "tier": []string{"web", "api", "batch"}[i%3]}
}

func controllerRef(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}}
}

func deployment(client *kubernetes.Clientset, ns string, i, replicas int) (types.UID, error) {
	name := fmt.Sprintf("app-%05d", i)
	deployments := client.AppsV1().Deployments(ns)
	if d, err := deployments.Get(ctx, name, metav1.GetOptions{}); err == nil {
		existed["Deployment"].Add(1)
		return d.UID, nil
	} else if !apierrors.IsNotFound(err) {
		return "", err
	}
	apply := appsv1ac.Deployment(name, ns).WithLabels(labels(i)).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(int32(replicas)).WithPaused(true).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": name})).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels(i)).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("app").WithImage("registry.k8s.io/pause:3.10")))))
	d, err := deployments.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "gitops", Force: true})
	if err != nil {
		return "", err
	}
	created["Deployment"].Add(1)
	if i%4 == 0 {
		// The HPA-style writer takes spec.replicas through the scale subresource.
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: int32(replicas + 1)}}
		if _, err := deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{FieldManager: "hpa-controller"}); err != nil {
			return "", err
		}
	}
	if i%5 == 0 {
		patch := []byte(`{"metadata":{"annotations":{"team":"checkout"}}}`)
		if _, err := deployments.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "annotator"}); err != nil {
			return "", err
		}
	}
	return d.UID, nil
}

func replicaSet(client *kubernetes.Clientset, ns string, i, replicas int, owner types.UID) (types.UID, error) {
	name := fmt.Sprintf("app-%05d-rs", i)
	n := int32(replicas)
	l := labels(i)
	l["pod-template-hash"] = "rs"
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l, OwnerReferences: controllerRef("apps/v1", "Deployment", fmt.Sprintf("app-%05d", i), owner)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%05d", i), "pod-template-hash": "rs"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()},
		},
	}
	got, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if ok, err := count("ReplicaSet", err); err != nil {
		return "", err
	} else if ok {
		return got.UID, nil
	}
	got, err = client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return got.UID, nil
}

// nodeFor names the kwok node pod j is bound to, or "" with no nodes.
func nodeFor(j, nodes int) string {
	if nodes <= 0 {
		return ""
	}
	return fmt.Sprintf("kwok-node-%d", j%nodes)
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		SchedulerName: "coord-bench-unscheduled",
		Containers:    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
	}
}

// boundPodSpec is podSpec bound to `node` (as the scheduler would have), or unbound for "".
func boundPodSpec(node string) corev1.PodSpec {
	spec := podSpec()
	spec.NodeName = node
	return spec
}

func pod(client *kubernetes.Clientset, ns string, i, k int, owner types.UID, node string) error {
	l := labels(i)
	l["pod-template-hash"] = "rs"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("app-%05d-rs-%02d", i, k), Namespace: ns, Labels: l,
			OwnerReferences: controllerRef("apps/v1", "ReplicaSet", fmt.Sprintf("app-%05d-rs", i), owner),
		},
		Spec: boundPodSpec(node),
	}
	_, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	_, err = count("Pod", err)
	return err
}

func barePod(client *kubernetes.Clientset, ns string, i int, node string) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%05d", i), Namespace: ns, Labels: labels(i % 100)},
		Spec:       boundPodSpec(node),
	}
	_, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{FieldManager: "coord-bench-loader"})
	_, err = count("BarePod", err)
	return err
}

func lease(client *kubernetes.Clientset, ns, kind, name, holder string, age time.Duration) error {
	duration := int32(40)
	now := metav1.NewMicroTime(time.Now().Add(-age))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &now, RenewTime: &now},
	}
	_, err := client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{FieldManager: "coord-bench-loader"})
	_, err = count(kind, err)
	return err
}

func pdb(client *kubernetes.Clientset, ns string, i, deployments int) error {
	// Most select one Deployment's pods; every tenth selects a whole tier, so pods fall
	// under two budgets at once (a drain would hang on them).
	selector := map[string]string{"app": fmt.Sprintf("app-%05d", (i*10)%max(deployments, 1))}
	if i%10 == 0 {
		selector = map[string]string{"tier": []string{"web", "api", "batch"}[i%3]}
	}
	one := intstr.FromInt32(1)
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pdb-%03d", i), Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}
	_, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, p, metav1.CreateOptions{FieldManager: "coord-bench-loader"})
	_, err = count("PodDisruptionBudget", err)
	return err
}

// widgetCRD installs widgets.bench.coord.test and waits until it is served.
func widgetCRD(dyn dynamic.Interface) schema.GroupVersionResource {
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.bench.coord.test"},
		"spec": map[string]any{
			"group": "bench.coord.test",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		check(err)
	}
	gvr := schema.GroupVersionResource{Group: "bench.coord.test", Version: "v1", Resource: "widgets"}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return gvr
		} else if time.Now().After(deadline) {
			check(fmt.Errorf("the Widget CRD is not served after 60s: %w", err))
		}
	}
}

// widget creates a Widget (owned by `owners`) and a ConfigMap it owns; returns the Widget's uid.
func widget(client *kubernetes.Clientset, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, owners []metav1.OwnerReference, i int) (types.UID, error) {
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.coord.test/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"size": i % 7},
	}}
	w.SetOwnerReferences(owners)
	got, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, w, metav1.CreateOptions{FieldManager: "widget-operator"})
	ok, err := count("Widget", err)
	if err != nil {
		return "", err
	}
	if !ok {
		if got, err = dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", err
		}
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-config", Namespace: ns, OwnerReferences: controllerRef("bench.coord.test/v1", "Widget", name, got.GetUID())},
		Data:       map[string]string{"size": fmt.Sprint(i % 7)},
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "widget-operator"})
	_, err = count("ConfigMap", err)
	return got.GetUID(), err
}
