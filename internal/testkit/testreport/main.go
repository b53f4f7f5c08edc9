// Command testreport reads `go test -json` on its standard input and
// writes what a person reading a test run wants: each package's result
// line, the whole output of every test that failed (and of any test still
// running when the run ended: a timeout or a crash), everything else
// the packages printed, and a closing count. Parallel tests' output is
// kept apart, test by test, so a failure reads as it happened.
//
//	go test -json ./... | go run ./internal/testkit/testreport -stage unit -times FILE
//
// -times appends each top-level test's result and duration to FILE, and
// `testreport -summary FILE` prints the slowest of them and the count of
// them all: one file for every stage of a run.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// key names a test within its package.
type key struct{ pkg, test string }

func main() {
	stage := flag.String("stage", "tests", "the name of the run, before its closing count")
	times := flag.String("times", "", "append each top-level test's result and duration to this file")
	summary := flag.String("summary", "", "print the slowest tests recorded in this file and the count of all, and exit")
	slowest := flag.Int("slowest", 15, "how many of the slowest tests -summary prints")
	verbose := flag.Bool("v", false, "print every test's output as it comes")
	flag.Parse()
	if *summary != "" {
		if err := printSummary(os.Stdout, *stage, *summary, *slowest); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		return
	}
	r := &report{out: os.Stdout, verbose: *verbose, output: map[key]*strings.Builder{}}
	if *times != "" {
		f, err := os.OpenFile(*times, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		defer f.Close()
		r.times = f
	}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	r.finish(*stage)
	if r.failed > 0 {
		os.Exit(1)
	}
}

type report struct {
	out     io.Writer
	times   io.Writer
	verbose bool
	// output holds each running test's output until it ends.
	output                  map[key]*strings.Builder
	order                   []key
	passed, failed, skipped int
}

func (r *report) read(in io.Reader) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// A build error or whatever else go test wrote as it is.
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.handle(e)
	}
	return scanner.Err()
}

func (r *report) handle(e event) {
	k := key{e.Package, e.Test}
	switch {
	case e.Test == "" && e.Action == "output":
		// The package's result comes on its "ok" or "FAIL" line.
		if e.Output != "PASS\n" && e.Output != "FAIL\n" {
			fmt.Fprint(r.out, e.Output)
		}
	case e.Test == "":
	case e.Action == "run":
		r.output[k] = &strings.Builder{}
		r.order = append(r.order, k)
	case e.Action == "output":
		if r.verbose {
			fmt.Fprint(r.out, e.Output)
		} else if b := r.output[k]; b != nil {
			b.WriteString(e.Output)
		}
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		r.end(k, e)
	}
}

// end records a test's result; a failed one's output is printed whole.
func (r *report) end(k key, e event) {
	top := !strings.Contains(k.test, "/")
	if top {
		switch e.Action {
		case "pass":
			r.passed++
		case "fail":
			r.failed++
		case "skip":
			r.skipped++
		}
		if r.times != nil {
			fmt.Fprintf(r.times, "%s %.2f %s %s\n", e.Action, e.Elapsed, k.pkg, k.test)
		}
	}
	if e.Action == "fail" && top && !r.verbose {
		// The subtests' output is the test's own too: printed with it.
		for _, sub := range r.order {
			if sub.pkg == k.pkg && (sub.test == k.test || strings.HasPrefix(sub.test, k.test+"/")) && r.output[sub] != nil {
				fmt.Fprint(r.out, r.output[sub].String())
			}
		}
	}
	if top {
		r.forget(k)
	}
}

// forget drops a finished top-level test's output and its subtests'.
func (r *report) forget(k key) {
	r.order = slices.DeleteFunc(r.order, func(sub key) bool {
		if sub.pkg == k.pkg && (sub.test == k.test || strings.HasPrefix(sub.test, k.test+"/")) {
			delete(r.output, sub)
			return true
		}
		return false
	})
}

// finish prints the output of tests that never ended (the run timed out
// or crashed under them) and the closing count.
func (r *report) finish(stage string) {
	if len(r.order) > 0 && !r.verbose {
		fmt.Fprintln(r.out, "\ntests still running when the run ended:")
		for _, k := range r.order {
			fmt.Fprintf(r.out, "--- %s %s\n%s", k.pkg, k.test, r.output[k].String())
		}
	}
	if len(r.order) > 0 && r.failed == 0 {
		r.failed = 1
	}
	fmt.Fprintf(r.out, "%s: %d passed, %d failed, %d skipped\n", stage, r.passed, r.failed, r.skipped)
}

// printSummary prints the n slowest tests recorded with -times and the
// count of every test recorded there.
func printSummary(w io.Writer, stage, path string, n int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	type timed struct {
		elapsed time.Duration
		name    string
	}
	var all []timed
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		fields := strings.SplitN(line, " ", 3)
		if len(fields) != 3 {
			continue
		}
		secs, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		counts[fields[0]]++
		all = append(all, timed{time.Duration(secs * float64(time.Second)), fields[2]})
	}
	slices.SortFunc(all, func(a, b timed) int { return int(b.elapsed - a.elapsed) })
	fmt.Fprintf(w, "the %d slowest tests:\n", min(n, len(all)))
	for _, t := range all[:min(n, len(all))] {
		fmt.Fprintf(w, "  %7.1fs  %s\n", t.elapsed.Seconds(), t.name)
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped\n", stage, counts["pass"], counts["fail"], counts["skip"])
	return nil
}
