package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"seatflow"
	"seatflow/internal/reconcile"
)

// Result is what one scenario promised and measured: the JSON a run writes for
// docs/RELIABILITY.md.
type Result struct {
	Order    int    `json:"order"`
	Name     string `json:"name"`
	Fault    string `json:"fault"`
	Promise  string `json:"promise"`
	Long     bool   `json:"long"`
	Instance int    `json:"instances"`
	// FaultSeconds is how long the fault was on.
	FaultSeconds float64 `json:"faultSeconds"`
	Requests     int     `json:"requests"`
	// Codes counts every answer by code; DuringFault those of requests sent while the
	// fault was on.
	Codes       map[string]int `json:"codes"`
	DuringFault map[string]int `json:"duringFault"`
	// P99FaultMS is the p99 latency of requests sent during the fault (all operations),
	// P99MutationFaultMS that of holds, pays and cancels, MaxMS the slowest request.
	P99FaultMS         float64 `json:"p99FaultMs"`
	P99MutationFaultMS float64 `json:"p99MutationFaultMs"`
	MaxMS              float64 `json:"maxMs"`
	// RecoverySeconds: from healing to the end of the last request that failed because of
	// the fault (SERVICE_UNAVAILABLE, TIMEOUT, TRANSPORT); 0 when none failed after it.
	RecoverySeconds float64 `json:"recoverySeconds"`
	ReconcileRuns   int     `json:"reconcileRuns"`
	Repairs         Repairs `json:"repairs"`
	PaidOrders      int     `json:"paidOrders"`
	PendingOrders   int     `json:"pendingOrders"`
	// Linearizability is what the history checker found and measured (nil before it ran).
	Linearizability *Linearizability `json:"linearizability,omitempty"`
	// Notes are the scenario's own measurements.
	Notes      []string `json:"notes"`
	Violations []string `json:"violations"`
}

// Repairs sums the reconciler's reports of the checker's runs.
type Repairs struct {
	ExpiredCancelled    int `json:"expiredCancelled"`
	PaidSeatsFixed      int `json:"paidSeatsFixed"`
	HashesRebuilt       int `json:"hashesRebuilt"`
	OrphanHoldsReleased int `json:"orphanHoldsReleased"`
	SoldOrphansReleased int `json:"soldOrphansReleased"`
	LimitsRecounted     int `json:"limitsRecounted"`
	PendingSeatsReheld  int `json:"pendingSeatsReheld"`
	// PurchaseCountsRecounted must stay 0: a crash cannot set a purchase count apart from
	// the occupancy (checkPurchaseCounts).
	PurchaseCountsRecounted int `json:"purchaseCountsRecounted"`
	// WaitlistCountsRecounted and ReturnedSeatsOffered are the waiting list's repairs.
	WaitlistCountsRecounted int `json:"waitlistCountsRecounted,omitempty"`
	ReturnedSeatsOffered    int `json:"returnedSeatsOffered,omitempty"`
}

func (r *Repairs) add(rep *reconcile.Report) {
	r.ExpiredCancelled += rep.ExpiredCancelled
	r.PaidSeatsFixed += rep.PaidSeatsFixed
	r.HashesRebuilt += rep.HashesRebuilt
	r.OrphanHoldsReleased += rep.OrphanHoldsReleased
	r.SoldOrphansReleased += rep.SoldOrphansReleased
	r.LimitsRecounted += rep.LimitsRecounted
	r.PendingSeatsReheld += rep.PendingSeatsReheld
	r.PurchaseCountsRecounted += rep.PurchaseCountsRecounted
	r.WaitlistCountsRecounted += rep.WaitlistCountsRecounted
	r.ReturnedSeatsOffered += rep.ReturnedSeatsOffered
}

// String lists the non-zero repairs ("none" when there are none).
func (r Repairs) String() string {
	var out string
	for _, kv := range []struct {
		k string
		v int
	}{{"expired", r.ExpiredCancelled}, {"paid seats fixed", r.PaidSeatsFixed}, {"hashes rebuilt", r.HashesRebuilt},
		{"orphan holds released", r.OrphanHoldsReleased}, {"sold orphans released", r.SoldOrphansReleased},
		{"limits recounted", r.LimitsRecounted}, {"pending seats re-held", r.PendingSeatsReheld},
		{"purchase counts recounted", r.PurchaseCountsRecounted}, {"waiting-list counts recounted", r.WaitlistCountsRecounted},
		{"returned seats offered", r.ReturnedSeatsOffered}} {
		if kv.v > 0 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%s %d", kv.k, kv.v)
		}
	}
	if out == "" {
		return "none"
	}
	return out
}

func (r *Result) violate(format string, a ...any) {
	if len(r.Violations) < 50 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, a...))
	}
}

// Note adds a scenario measurement.
func (r *Result) Note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

func (r *Result) countOrder(st seatflow.OrderStatus) {
	switch st {
	case seatflow.OrderPaid:
		r.PaidOrders++
	case seatflow.OrderPending:
		r.PendingOrders++
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measure fills the request figures from the recorder.
func (r *Result) measure(rec *Recorder) {
	samples, on, off := rec.Samples()
	r.Requests = len(samples)
	r.Codes, r.DuringFault = map[string]int{}, map[string]int{}
	if !on.IsZero() && !off.IsZero() {
		r.FaultSeconds = off.Sub(on).Seconds()
	}
	var all, mut []time.Duration
	var lastFail time.Time
	for _, s := range samples {
		r.Codes[s.Code]++
		r.MaxMS = max(r.MaxMS, ms(s.Latency))
		if during(s, on, off) {
			r.DuringFault[s.Code]++
			all = append(all, s.Latency)
			if isMutation(s.Op) {
				mut = append(mut, s.Latency)
			}
		}
		switch s.Code {
		case seatflow.EUNAVAILABLE, CodeTimeout, CodeTransport:
			if end := s.Start.Add(s.Latency); end.After(lastFail) {
				lastFail = end
			}
		}
	}
	r.P99FaultMS, r.P99MutationFaultMS = ms(p99(all)), ms(p99(mut))
	if !off.IsZero() && lastFail.After(off) {
		r.RecoverySeconds = lastFail.Sub(off).Seconds()
	}
}

// write stores the result as JSON in SEATFLOW_FAULTS_RESULTS, when set.
func (r *Result) write() error {
	dir := os.Getenv("SEATFLOW_FAULTS_RESULTS")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s.json", r.Order, r.Name)), b, 0o644)
}

// ReadResults reads every result of dir, in scenario order.
func ReadResults(dir string) ([]*Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, f := range files {
		if strings.HasSuffix(f, historySuffix) { // a scenario's history, beside its result
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, &r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name > out[j].Name // 4: unreachable (refused), then blackholed (silent)
	})
	return out, nil
}
