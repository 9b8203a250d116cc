//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Garra end to end on a real cluster")
}

var (
	k      *cluster
	double *doubleClient
	times  = &timings{}
)

// llmKey is the provider key the gateway gets from a Secret; the suite
// checks it reaches the double and never a sandbox pod.
const llmKey = "sk-e2e-llm-key-6a1f0c9e2b7d4358a1c0"

var _ = BeforeSuite(func(ctx SpecContext) {
	p, err := loadParams()
	Expect(err).NotTo(HaveOccurred())
	k, err = newCluster(p)
	Expect(err).NotTo(HaveOccurred())

	start := time.Now()
	Expect(k.loadImages(ctx)).To(Succeed())
	times.record("images loaded", time.Since(start))

	start = time.Now()
	Expect(k.installOperator(ctx)).To(Succeed())
	times.record("operator installed by the chart and ready", time.Since(start))

	Expect(k.ensureNamespace(ctx, p.Namespace)).To(Succeed())
	Expect(k.ensureStaticClass(ctx)).To(Succeed())
	Expect(k.deployDouble(ctx, p.Namespace)).To(Succeed())
	Expect(k.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-keys", Namespace: p.Namespace},
		StringData: map[string]string{"openai": llmKey},
	})).To(Or(Succeed(), MatchError(ContainSubstring("already exists"))))

	addr, err := k.serviceAddr(ctx, p.Namespace, doubleName, 8080)
	Expect(err).NotTo(HaveOccurred())
	double = &doubleClient{base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	Eventually(func(g Gomega) {
		_, err := double.requests(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}, NodeTimeout(8*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if k == nil {
		return
	}
	defer times.flush(k.p.Timings)
	if os.Getenv("E2E_KEEP") != "" {
		GinkgoWriter.Println("E2E_KEEP set: leaving the operator and namespace", k.p.Namespace)
		return
	}
	// GarraServers first, while the operator still runs; then the namespace.
	var list garrav1alpha1.GarraServerList
	if err := k.c.List(ctx, &list, client.InNamespace(k.p.Namespace)); err == nil {
		for i := range list.Items {
			_ = k.deleteAndWait(ctx, &list.Items[i])
		}
	}
	_ = k.deleteAndWait(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.p.Namespace}})
	Expect(k.removeVolumes(ctx, k.p.Namespace)).To(Succeed())
	Expect(k.uninstallOperator()).To(Succeed())
}, NodeTimeout(5*time.Minute))

// timings collects named durations and prints them once, at the end.
type timings struct {
	mu    sync.Mutex
	lines []string
}

func (t *timings) record(name string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := fmt.Sprintf("%-60s %8.1f s", name, d.Seconds())
	t.lines = append(t.lines, line)
	GinkgoWriter.Println("timing:", line)
}

func (t *timings) flush(file string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := "e2e timings:\n  " + strings.Join(t.lines, "\n  ") + "\n"
	fmt.Fprint(os.Stderr, out)
	if file == "" {
		return
	}
	if f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		_, _ = f.WriteString(out)
		_ = f.Close()
	}
}
