package main

// The cold-start report: failures, per-family summaries and the table.

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

func countColdFailures(results []coldResult) int {
	n := 0
	for _, r := range results {
		if r.Error != "" {
			n++
		}
	}
	return n
}

// coldSummary is one family's (or all cases') first-Run statistics over
// the cases that did not fail.
type coldSummary struct {
	Family    string
	Plans     int // cases measured
	Failed    int
	Median    float64 // first-Run ms
	Worst     float64
	WorstCase string
}

// summarizeCold gives one summary per family, in the order the families
// first appear, then one named "all" over every case.
func summarizeCold(results []coldResult) []coldSummary {
	var order []string
	byFamily := map[string][]coldResult{}
	for _, r := range results {
		if _, ok := byFamily[r.Family]; !ok {
			order = append(order, r.Family)
		}
		byFamily[r.Family] = append(byFamily[r.Family], r)
	}
	var out []coldSummary
	for _, f := range order {
		out = append(out, summarizeColdGroup(f, byFamily[f]))
	}
	return append(out, summarizeColdGroup("all", results))
}

func summarizeColdGroup(name string, results []coldResult) coldSummary {
	s := coldSummary{Family: name}
	var first []float64
	for _, r := range results {
		if r.Error != "" {
			s.Failed++
			continue
		}
		first = append(first, r.FirstMS)
		if s.WorstCase == "" || r.FirstMS > s.Worst {
			s.Worst, s.WorstCase = r.FirstMS, r.Case
		}
	}
	s.Plans = len(first)
	s.Median = median(first)
	return s
}

// median is the middle value of v (the mean of the middle two for an even
// count), 0 for none; v is not modified.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// writeColdReport writes a pass's table, its failures and its summary.
func writeColdReport(w io.Writer, results []coldResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tinit ms\tfirst Run ms\tsecond Run ms\t")
	var failures []coldResult
	for _, r := range results {
		if r.Error != "" {
			failures = append(failures, r)
			fmt.Fprintf(tw, "%s\tFAILED\t\t\t\n", r.Case)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t\n", r.Case, r.InitMS, r.FirstMS, r.SecondMS)
	}
	tw.Flush()
	for _, r := range failures {
		fmt.Fprintf(w, "FAILED %s: %s\n", r.Case, r.Error)
	}
	fmt.Fprintln(w, "\nfirst Run by family:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  family\tplans\tfailed\tmedian ms\tworst ms\tworst case")
	for _, s := range summarizeCold(results) {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.1f\t%.1f\t%s\n", s.Family, s.Plans, s.Failed, s.Median, s.Worst, s.WorstCase)
	}
	tw.Flush()
}
