// elector takes part in real client-go leader election on one Lease, for tests.
// It prints "leading" when it becomes leader and "following <id>" on changes.
//
//	elector -kubeconfig F -namespace NS -lease NAME -identity ID [-duration 10s -renew 8s -retry 2s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "default", "lease namespace")
	lease := flag.String("lease", "", "lease name")
	identity := flag.String("identity", "", "holder identity")
	duration := flag.Duration("duration", 10*time.Second, "lease duration")
	renew := flag.Duration("renew", 8*time.Second, "renew deadline")
	retry := flag.Duration("retry", 2*time.Second, "retry period")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config.UserAgent = "coord-test-elector"
	client := kubernetes.NewForConfigOrDie(config)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(*namespace, *lease),
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *duration,
		RenewDeadline:   *renew,
		RetryPeriod:     *retry,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { fmt.Println("leading"); <-ctx.Done() },
			OnStoppedLeading: func() { fmt.Println("stopped") },
			OnNewLeader:      func(id string) { fmt.Println("following", id) },
		},
	})
}
