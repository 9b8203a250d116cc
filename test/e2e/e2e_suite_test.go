//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Garra end to end on a real cluster")
}

var (
	k      *cluster
	dialer *serviceDialer
	double *doubleClient
	times  = &timings{}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	p, err := loadParams()
	Expect(err).NotTo(HaveOccurred())
	k, err = newCluster(p)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("cluster %s, Services reached by %s\n", k.cfg.Host, p.Access)
	Expect(k.prepare(ctx, times.record)).To(Succeed())

	dialer = newServiceDialer(k)
	hc := dialer.httpClient()
	hc.Timeout = 10 * time.Second
	double = &doubleClient{base: serviceURL(p.Namespace, doubleName, 8080), http: hc}
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
	if dialer != nil {
		defer dialer.close()
	}
	if os.Getenv("E2E_KEEP") != "" {
		GinkgoWriter.Println("E2E_KEEP set: leaving the operator and namespace", k.p.Namespace)
		return
	}
	Expect(k.cleanUp(ctx)).To(Succeed())
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
