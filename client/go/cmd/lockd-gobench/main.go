// Command lockd-gobench measures the Go client against one lockd on
// loopback: STATUS requests one at a time, then pipelined (many
// goroutines sharing one Client, so one connection), each phase bounded
// by a count and by time.  bench/go-vs-c.sh runs it beside the same loop
// in C (bench/liblockd_loop.c).  It prints one line per phase:
// "go <phase> requests=N seconds=S per_second=R cpu_seconds=C".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"lockd.dev/lockd"
)

func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	addr := flag.String("a", "127.0.0.1:7420", "lockd's address")
	n := flag.Int("n", 20000, "requests per phase")
	depth := flag.Int("d", 64, "requests in flight when pipelined")
	limit := flag.Duration("t", 20*time.Second, "the longest a phase may run")
	flag.Parse()
	ctx := context.Background()
	c, err := lockd.Dial(ctx, *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	report := func(phase string, done int64, start time.Time, cpu0 float64) {
		s := time.Since(start).Seconds()
		fmt.Printf("go %s requests=%d seconds=%.3f per_second=%.0f cpu_seconds=%.3f\n",
			phase, done, s, float64(done)/s, cpu()-cpu0)
	}

	start, cpu0 := time.Now(), cpu()
	var done int64
	for ; done < int64(*n) && time.Since(start) < *limit; done++ {
		if _, err := c.Status(ctx, "bench/go"); err != nil {
			log.Fatal(err)
		}
	}
	report("one-at-a-time", done, start, cpu0)

	start, cpu0 = time.Now(), cpu()
	var count int64
	var wg sync.WaitGroup
	for g := 0; g < *depth; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&count, 1) <= int64(*n) &&
				time.Since(start) < *limit {
				if _, err := c.Status(ctx, "bench/go"); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()
	done = atomic.LoadInt64(&count) - int64(*depth)
	if done > int64(*n) {
		done = int64(*n)
	}
	report(fmt.Sprintf("pipelined-%d", *depth), done, start, cpu0)
	os.Exit(0)
}
