// coord-test-ctrlrt: a controller-runtime manager with leader election on and nothing
// else to run, so it holds (or waits for) its Lease exactly as an operator built on
// sigs.k8s.io/controller-runtime does. Prints "leading" once elected. SIGTERM ends it and
// releases the lease (LeaderElectionReleaseOnCancel); SIGKILL leaves the lease to expire.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// leading is a runnable that needs leader election: it starts only on the leader.
type leading struct{}

func (leading) Start(ctx context.Context) error {
	fmt.Println("leading")
	<-ctx.Done()
	return nil
}

func (leading) NeedLeaderElection() bool { return true }

func main() {
	// controller-runtime registers -kubeconfig itself (and reads KUBECONFIG).
	namespace := flag.String("namespace", "default", "namespace of the lease")
	lease := flag.String("lease", "", "lease name")
	flag.Parse()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	duration, renew, retry := 15*time.Second, 10*time.Second, 2*time.Second
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		LeaderElection:                true,
		LeaderElectionID:              *lease,
		LeaderElectionNamespace:       *namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &duration,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Add(leading{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
