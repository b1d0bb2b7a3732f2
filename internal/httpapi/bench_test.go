package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkNodeAPI measures node GET and LIST (page of 100 out of 1,000,
// and all 1,000 in one page)
// through the real HTTP stack, auth included, on SQLite and PostgreSQL.
// It reports req/s; run with `make bench` or
// go test -run '^$' -bench NodeAPI ./internal/httpapi.
func BenchmarkNodeAPI(b *testing.B) {
	for name, open := range stores() {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, open)
			var ids []string
			for i := 0; i < 1000; i++ {
				ids = append(ids, e.createNode(fmt.Sprintf("bench-%04d", i)).ID)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			get := func(b *testing.B, path string) {
				req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+adminSecret)
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("GET %s: %d", path, res.StatusCode)
				}
			}
			b.Run("GET", func(b *testing.B) {
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						get(b, "/v1/nodes/"+ids[i%len(ids)])
						i++
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			})
			b.Run("LIST100", func(b *testing.B) {
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						get(b, fmt.Sprintf("/v1/nodes?limit=%d", 100))
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			})
			// Every node in one page, one request at a time: what a
			// dashboard or a refresh of the fleet asks.
			b.Run("LIST1000", func(b *testing.B) {
				for b.Loop() {
					get(b, "/v1/nodes?limit=1000")
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/list")
			})
		})
	}
}
