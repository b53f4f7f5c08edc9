package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/store"
)

// onEachEngine runs a benchmark once on SQLite and once on PostgreSQL.
func onEachEngine(b *testing.B, bench func(b *testing.B, engine string)) {
	for _, engine := range []string{store.SQLite, store.Postgres} {
		b.Run(engine, func(b *testing.B) { bench(b, engine) })
	}
}

// benchServer is an API server on a loopback port, serving real HTTP to
// a number of concurrent clients until the benchmark run ends.
type benchServer struct {
	b       *testing.B
	url     string
	client  *http.Client
	clients int
}

// serveBench serves server for b, with a client that keeps a connection
// open for each of clients.
func serveBench(b *testing.B, server *api.Server, clients int) *benchServer {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	b.Cleanup(func() {
		client.CloseIdleConnections()
		cancel()
		if err := <-served; err != nil {
			b.Errorf("serve: %v", err)
		}
	})
	return &benchServer{b: b, url: "http://" + ln.Addr().String(), client: client, clients: clients}
}

// post sends body to path with the bearer token and header, reads the
// answer, and fails unless it is 200 OK.
func (s *benchServer) post(path, token string, body []byte, header map[string]string) error {
	req, err := http.NewRequest(http.MethodPost, s.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// drive calls do for every i below b.N, from all the clients at once
// (client tells which), with the benchmark timer running only meanwhile,
// and returns how long it took. It reports how many of the store's
// transactions meanwhile PostgreSQL refused and the store ran again, per
// 1,000 transactions.
func (s *benchServer) drive(do func(client, i int)) time.Duration {
	transactions := metrics.Sum("jarvis_store_transactions_total")
	reruns := metrics.Sum("jarvis_store_transaction_reruns_total")
	defer func() {
		transactions = metrics.Sum("jarvis_store_transactions_total") - transactions
		reruns = metrics.Sum("jarvis_store_transaction_reruns_total") - reruns
		s.b.ReportMetric(1000*reruns/max(transactions, 1), "reruns/1k-tx")
		s.b.ReportMetric(transactions/float64(s.b.N), "tx/op")
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	s.b.ResetTimer()
	start := time.Now()
	for c := range s.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < s.b.N; i = int(next.Add(1) - 1) {
				do(c, i)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	s.b.StopTimer()
	return elapsed
}
