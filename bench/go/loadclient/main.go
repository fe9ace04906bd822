// Command loadclient drives the transport benchmark (bench/transport/run.ts)
// with grpc-go 1.33 (Debian golang-google-grpc-dev): the same client for the
// daemon and for bench/go/refserver. Messages are bytes through a
// pass-through codec. Each mode prints one JSON object on stdout.
//
// Build (GOPATH mode):
//
//	GO111MODULE=off GOPATH=$TMP:/usr/share/gocode go build -o loadclient ./bench/go/loadclient
//
// Usage:
//
//	loadclient dump  -socket S -out DIR
//	    writes DIR/list.bin (ListPods response), DIR/get.bin (GetPod of the
//	    first pod), DIR/uid.txt, DIR/watch.bin (the WatchPods events up to
//	    INITIAL_SYNC_COMPLETE, each prefixed by a 4-byte big-endian length)
//	loadclient unary -socket S -method M [-uid UID] -duration SEC -concurrency N [-conns C]
//	    requests/s and latency of N callers sharing C connections
//	loadclient watch -socket S -watchers N [-events K] [-duration SEC] [-out FILE]
//	    N watchers, one connection each, started together; the initial phase
//	    lasts until each saw K events (0: its INITIAL_SYNC_COMPLETE); then
//	    live events are read for SEC seconds and each is written to FILE as
//	    "watcher uid type arrival_unix_ns"
package main

import (
	rawproto "../../../tests/_support/go/rawproto"
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

var streamDesc = &grpc.StreamDesc{StreamName: "WatchPods", ServerStreams: true}

func dial(socket string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return grpc.DialContext(ctx, "passthrough:///pods-api",
		grpc.WithInsecure(),
		grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawproto.Codec{}), grpc.MaxCallRecvMsgSize(1<<30)),
	)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadclient:", err)
	os.Exit(1)
}

func pct(sorted []float64, p float64) interface{} {
	if len(sorted) == 0 {
		return nil
	}
	i := int(p/100*float64(len(sorted)-1) + 0.5)
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func emit(v interface{}) {
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
}

func runDump(socket, dir string) {
	conn, err := dial(socket)
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var list []byte
	if err := conn.Invoke(ctx, "/v1alpha1.Pods/ListPods", []byte{}, &list); err != nil {
		fail(err)
	}
	uid := string(rawproto.Field(rawproto.Field(rawproto.Field(list, 1), 1), 5))
	var get []byte
	if err := conn.Invoke(ctx, "/v1alpha1.Pods/GetPod", rawproto.GetRequest(uid), &get); err != nil {
		fail(err)
	}
	s, err := conn.NewStream(ctx, streamDesc, "/v1alpha1.Pods/WatchPods")
	if err != nil {
		fail(err)
	}
	if err := s.SendMsg([]byte{}); err != nil {
		fail(err)
	}
	s.CloseSend()
	var watch []byte
	events := 0
	for {
		var m []byte
		if err := s.RecvMsg(&m); err != nil {
			fail(err)
		}
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(m)))
		watch = append(append(watch, n[:]...), m...)
		events++
		if len(m) == 2 && m[0] == 0x08 && m[1] == 0x04 {
			break
		}
	}
	cancel()
	for name, body := range map[string][]byte{"list.bin": list, "get.bin": get, "watch.bin": watch, "uid.txt": []byte(uid)} {
		if err := ioutil.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			fail(err)
		}
	}
	emit(map[string]interface{}{"list_bytes": len(list), "pods": rawproto.CountField(list, 1), "get_bytes": len(get), "events": events, "uid": uid})
}

func runUnary(socket, method, uid string, duration time.Duration, concurrency, conns int) {
	clients := make([]*grpc.ClientConn, conns)
	for i := range clients {
		c, err := dial(socket)
		if err != nil {
			fail(err)
		}
		defer c.Close()
		clients[i] = c
	}
	req := []byte{}
	if uid != "" {
		req = rawproto.GetRequest(uid)
	}
	// Warm up every connection.
	for _, c := range clients {
		var resp []byte
		c.Invoke(context.Background(), method, req, &resp)
	}
	var mu sync.Mutex
	errs := map[string]int{}
	var latencies []float64
	var received int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(duration)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(c *grpc.ClientConn) {
			defer wg.Done()
			var local []float64
			var bytes int64
			localErrs := map[string]int{}
			for time.Now().Before(deadline) {
				var resp []byte
				t0 := time.Now()
				err := c.Invoke(context.Background(), method, req, &resp)
				if err != nil {
					localErrs[status.Code(err).String()]++
					continue
				}
				local = append(local, float64(time.Since(t0).Nanoseconds())/1e6)
				bytes += int64(len(resp))
			}
			mu.Lock()
			latencies = append(latencies, local...)
			received += bytes
			for k, v := range localErrs {
				errs[k] += v
			}
			mu.Unlock()
		}(clients[w%conns])
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	sort.Float64s(latencies)
	mean := 0.0
	if len(latencies) > 0 {
		mean = float64(received) / float64(len(latencies))
	}
	emit(map[string]interface{}{
		"ok": len(latencies), "errors": errs, "seconds": elapsed,
		"rps": float64(len(latencies)) / elapsed, "p50_ms": pct(latencies, 50),
		"p99_ms": pct(latencies, 99), "mean_bytes": mean,
	})
}

type arrival struct {
	watcher int
	uid     string
	typ     byte
	at      int64
}

func runWatch(socket string, watchers, events int, duration time.Duration, out string) {
	conns := make([]*grpc.ClientConn, watchers)
	for i := range conns {
		c, err := dial(socket)
		if err != nil {
			fail(err)
		}
		defer c.Close()
		conns[i] = c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	ended := map[string]int{}
	initialEvents := 0
	liveEvents := 0
	synced := 0
	var lastSync time.Time
	var arrivals []arrival
	startGate := make(chan struct{})
	allSynced := make(chan struct{})
	var syncWG sync.WaitGroup
	syncWG.Add(watchers)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func(i int, c *grpc.ClientConn) {
			defer wg.Done()
			syncedOnce := false
			markSynced := func(ok bool) {
				if syncedOnce {
					return
				}
				syncedOnce = true
				mu.Lock()
				if ok {
					synced++
					lastSync = time.Now()
				}
				mu.Unlock()
				syncWG.Done()
			}
			defer markSynced(false)
			<-startGate
			s, err := c.NewStream(ctx, streamDesc, "/v1alpha1.Pods/WatchPods")
			if err == nil {
				err = s.SendMsg([]byte{})
			}
			if err != nil {
				mu.Lock()
				ended[status.Code(err).String()]++
				mu.Unlock()
				return
			}
			s.CloseSend()
			seen := 0
			var local []arrival
			live := false
			for {
				var m []byte
				if err := s.RecvMsg(&m); err != nil {
					mu.Lock()
					ended[status.Code(err).String()]++
					arrivals = append(arrivals, local...)
					liveEvents += len(local)
					initialEvents += seen
					mu.Unlock()
					return
				}
				now := time.Now()
				if !live {
					seen++
					if (events > 0 && seen >= events) || (events == 0 && len(m) == 2 && m[0] == 0x08 && m[1] == 0x04) {
						live = true
						markSynced(true)
					}
					continue
				}
				select {
				case <-allSynced:
					// Only events after every watcher synced count as live.
					uid := string(rawproto.Field(rawproto.Field(rawproto.Field(m, 2), 1), 5))
					var typ byte
					if len(m) > 1 && m[0] == 0x08 {
						typ = m[1]
					}
					local = append(local, arrival{i, uid, typ, now.UnixNano()})
				default:
				}
			}
		}(i, c)
	}
	start := time.Now()
	close(startGate)
	syncWG.Wait()
	close(allSynced)
	syncedAt := time.Now()
	mu.Lock()
	initialSeconds := lastSync.Sub(start).Seconds()
	mu.Unlock()
	if duration > 0 {
		time.Sleep(duration)
	}
	cancel()
	wg.Wait()
	liveSeconds := time.Since(syncedAt).Seconds()
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			fail(err)
		}
		w := bufio.NewWriter(f)
		for _, a := range arrivals {
			fmt.Fprintf(w, "%d %s %d %d\n", a.watcher, a.uid, a.typ, a.at)
		}
		w.Flush()
		f.Close()
	}
	rate := 0.0
	if initialSeconds > 0 {
		rate = float64(initialEvents) / initialSeconds
	}
	emit(map[string]interface{}{
		"watchers": watchers, "synced": synced, "initial_events": initialEvents,
		"initial_seconds": initialSeconds, "initial_events_per_s": rate,
		"live_events": liveEvents, "live_seconds": liveSeconds, "ended": ended,
		"start_ns": start.UnixNano(), "synced_at_ns": syncedAt.UnixNano(),
	})
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadclient dump|unary|watch [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	socket := fs.String("socket", "", "UNIX socket")
	out := fs.String("out", "", "dump: directory; watch: live-event file")
	method := fs.String("method", "/v1alpha1.Pods/ListPods", "unary: method path")
	uid := fs.String("uid", "", "unary: GetPod this pod UID")
	duration := fs.Float64("duration", 2, "unary: seconds; watch: live seconds after all synced")
	concurrency := fs.Int("concurrency", 1, "unary: callers at once")
	connsFlag := fs.Int("conns", 1, "unary: connections the callers share")
	watchers := fs.Int("watchers", 100, "watch: streams, one connection each")
	events := fs.Int("events", 0, "watch: initial events per watcher (0: until INITIAL_SYNC_COMPLETE)")
	fs.Parse(os.Args[2:])
	if *socket == "" {
		fail(fmt.Errorf("-socket is required"))
	}
	d := time.Duration(*duration * float64(time.Second))
	switch os.Args[1] {
	case "dump":
		runDump(*socket, *out)
	case "unary":
		runUnary(*socket, *method, *uid, d, *concurrency, *connsFlag)
	case "watch":
		runWatch(*socket, *watchers, *events, d, *out)
	default:
		fail(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}
