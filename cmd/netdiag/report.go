package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ragsync/ragsync/p2p"
)

// Verdict thresholds, judged on the active transport. They are printed
// with every report.
var thresholds = []threshold{
	{Verdict: "good", RTTP95Ms: 80, JitterMs: 10, LossPct: 1},
	{Verdict: "playable", RTTP95Ms: 200, JitterMs: 30, LossPct: 5},
}

type threshold struct {
	Verdict  string  `json:"verdict"`
	RTTP95Ms float64 `json:"rtt_p95_ms_max"`
	JitterMs float64 `json:"jitter_ms_max"`
	LossPct  float64 `json:"loss_pct_max"`
}

// rttReport is a transport's clocksync.RTTStats: Samples over the run,
// Min/P50/P95/Max over its last 10 s (Recent samples).
type rttReport struct {
	Samples  uint64  `json:"samples"`
	Recent   int     `json:"recent"`
	Min      float64 `json:"min"`
	P50      float64 `json:"p50"`
	P95      float64 `json:"p95"`
	Max      float64 `json:"max"`
	Smoothed float64 `json:"smoothed"`
}

type transportReport struct {
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Active      bool       `json:"active"`
	Error       string     `json:"error,omitempty"`
	ProbeMs     [3]float64 `json:"probe_ms"` // 0 = lost or not probed
	ProbeMaxMs  float64    `json:"probe_max_ms"`
	ProbesLost  int        `json:"probes_lost"`
	RTTMs       rttReport  `json:"rtt_ms"`
	JitterInMs  float64    `json:"jitter_in_ms"`
	JitterOutMs float64    `json:"jitter_out_ms"`
	PingsSent   uint64     `json:"pings_sent"`
	Pongs       uint64     `json:"pongs_received"`
	PingLossPct float64    `json:"ping_loss_pct"`
}

type report struct {
	Role          string            `json:"role"`
	Room          string            `json:"room,omitempty"`
	DurationS     float64           `json:"duration_s"`
	Stopped       string            `json:"stopped,omitempty"`
	Transport     string            `json:"transport"`
	ChoiceReason  string            `json:"choice_reason"`
	Switches      int               `json:"switches"`
	Transports    []transportReport `json:"transports"`
	MessageSize   int               `json:"message_size"`
	Sent          uint64            `json:"messages_sent"`
	Received      uint64            `json:"messages_received"`
	Corrupt       uint64            `json:"messages_corrupt"`
	LossPct       float64           `json:"loss_pct"`
	Duplicates    uint64            `json:"duplicates"`
	Reordered     uint64            `json:"reordered"`
	Late          uint64            `json:"late"`
	TxMsgsPerS    float64           `json:"tx_messages_per_s"`
	RxMsgsPerS    float64           `json:"rx_messages_per_s"`
	TxKBps        float64           `json:"tx_kB_per_s"`
	RxKBps        float64           `json:"rx_kB_per_s"`
	LocalCand     string            `json:"local_candidate"`
	RemoteCand    string            `json:"remote_candidate"`
	ClockOffsetMs float64           `json:"clock_offset_ms"`
	ClockUncMs    float64           `json:"clock_uncertainty_ms"`
	ClockSynced   bool              `json:"clock_synced"`
	Events        []string          `json:"events"`
	Verdict       string            `json:"verdict"`
	VerdictReason string            `json:"verdict_reason"`
	Thresholds    []threshold       `json:"thresholds"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func buildReport(s *p2p.Session, before, st p2p.Stats, evs []p2p.Event, elapsed time.Duration,
	sent, recv, bytesIn, corrupt uint64, o options) report {
	sec := elapsed.Seconds()
	r := report{
		Role:          s.Role().String(),
		Room:          s.Room(),
		DurationS:     sec,
		Transport:     st.Transport.String(),
		ChoiceReason:  st.ChoiceReason,
		Switches:      st.Switches,
		MessageSize:   o.size,
		Sent:          sent,
		Received:      recv,
		Corrupt:       corrupt,
		LossPct:       100 * st.Loss,
		Duplicates:    st.Duplicates,
		Reordered:     st.Reordered,
		Late:          st.Late,
		TxMsgsPerS:    float64(sent) / sec,
		RxMsgsPerS:    float64(recv) / sec,
		TxKBps:        float64(sent) * float64(o.size) / sec / 1000,
		RxKBps:        float64(bytesIn) / sec / 1000,
		LocalCand:     st.LocalCandidate.String(),
		RemoteCand:    st.RemoteCandidate.String(),
		ClockOffsetMs: ms(st.ClockOffset),
		ClockUncMs:    ms(st.ClockUncertainty),
		ClockSynced:   st.ClockSynced,
		Thresholds:    thresholds,
	}
	for _, k := range []p2p.TransportKind{p2p.TransportWebRTC, p2p.TransportTCP} {
		l := st.Link(k)
		tr := transportReport{
			Name:        k.String(),
			State:       l.State.String(),
			Active:      k == st.Transport,
			Error:       l.Err,
			ProbeMaxMs:  ms(l.ProbeMax),
			ProbesLost:  l.ProbeLost,
			JitterInMs:  ms(l.Jitter),
			JitterOutMs: ms(l.JitterOut),
			PingsSent:   l.PingsSent,
			Pongs:       l.PongsReceived,
			RTTMs: rttReport{
				Samples: l.RTT.Samples, Recent: l.RTT.Recent, Min: ms(l.RTT.Min), P50: ms(l.RTT.P50), P95: ms(l.RTT.P95),
				Max: ms(l.RTT.Max), Smoothed: ms(l.RTT.Smoothed),
			},
		}
		for i, p := range l.Probe {
			tr.ProbeMs[i] = ms(p)
		}
		if l.PingsSent > 0 && l.PongsReceived <= l.PingsSent {
			tr.PingLossPct = 100 * float64(l.PingsSent-l.PongsReceived) / float64(l.PingsSent)
		}
		r.Transports = append(r.Transports, tr)
	}
	interrupted := false
	for _, ev := range evs {
		r.Events = append(r.Events, ev.String())
		if ev.Kind == p2p.EventInterrupted || ev.Kind == p2p.EventDisconnected {
			interrupted = true
		}
	}
	var active *transportReport
	for i := range r.Transports {
		if r.Transports[i].Active {
			active = &r.Transports[i]
		}
	}
	r.Verdict, r.VerdictReason = verdict(active, r.LossPct, interrupted)
	return r
}

// verdict judges the active transport against the thresholds.
func verdict(a *transportReport, lossPct float64, interrupted bool) (string, string) {
	if a == nil {
		return "poor", "no active transport"
	}
	if interrupted {
		return "poor", "the connection was interrupted during the test"
	}
	if a.RTTMs.Samples == 0 && a.Pongs > 0 {
		return "poor", "pings were answered, but every round trip overlapped a stall of this machine (a loaded machine?): none was measured"
	}
	if a.RTTMs.Samples == 0 {
		return "poor", "no ping was answered"
	}
	if a.RTTMs.Recent == 0 {
		return "poor", "no ping was answered in the last 10 s"
	}
	jitter := max(a.JitterInMs, a.JitterOutMs)
	for _, t := range thresholds {
		if a.RTTMs.P95 <= t.RTTP95Ms && jitter <= t.JitterMs && lossPct <= t.LossPct {
			return t.Verdict, fmt.Sprintf("%s: RTT p95 %.2f ms ≤ %g, jitter %.2f ms ≤ %g, loss %.2f%% ≤ %g%%",
				a.Name, a.RTTMs.P95, t.RTTP95Ms, jitter, t.JitterMs, lossPct, t.LossPct)
		}
	}
	t := thresholds[len(thresholds)-1]
	var why []string
	if a.RTTMs.P95 > t.RTTP95Ms {
		why = append(why, fmt.Sprintf("RTT p95 %.2f ms > %g", a.RTTMs.P95, t.RTTP95Ms))
	}
	if jitter > t.JitterMs {
		why = append(why, fmt.Sprintf("jitter %.2f ms > %g", jitter, t.JitterMs))
	}
	if lossPct > t.LossPct {
		why = append(why, fmt.Sprintf("loss %.2f%% > %g%%", lossPct, t.LossPct))
	}
	return "poor", a.Name + ": " + strings.Join(why, ", ")
}

func printReports(w io.Writer, asJSON bool, rs []report) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(rs) == 1 {
			return enc.Encode(rs[0])
		}
		return enc.Encode(rs)
	}
	for i, r := range rs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printText(w, r); err != nil {
			return err
		}
	}
	return nil
}

func printText(w io.Writer, r report) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	room := ""
	if r.Room != "" {
		room = ", room " + r.Room
	}
	p("netdiag report — this peer is the %s%s, measured %.1f s\n", r.Role, room, r.DurationS)
	if r.Stopped != "" {
		p("  stopped early: %s\n", r.Stopped)
	}
	p("\nTransports (ping = round trip):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tstate\t3-probe ping\tRTT min / p50 / p95 / max\tjitter in/out\tping loss\t")
	for _, t := range r.Transports {
		mark := " "
		if t.Active {
			mark = "*"
		}
		probe := "-"
		if t.ProbeMaxMs > 0 {
			probe = fmt.Sprintf("%s (max %.2f ms", fmtProbes(t.ProbeMs), t.ProbeMaxMs)
			if t.ProbesLost > 0 {
				probe += fmt.Sprintf(", %d lost", t.ProbesLost)
			}
			probe += ")"
		}
		rtt, jit, loss := "-", "-", "-"
		if t.RTTMs.Recent > 0 {
			rtt = fmt.Sprintf("%.2f / %.2f / %.2f / %.2f ms (%d)", t.RTTMs.Min, t.RTTMs.P50, t.RTTMs.P95, t.RTTMs.Max, t.RTTMs.Recent)
			jit = fmt.Sprintf("%.2f / %.2f ms", t.JitterInMs, t.JitterOutMs)
		}
		if t.PingsSent > 0 {
			loss = fmt.Sprintf("%.1f%% of %d", t.PingLossPct, t.PingsSent)
		}
		state := t.State
		if t.Error != "" {
			state += " (" + t.Error + ")"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t\n", mark, t.Name, state, probe, rtt, jit, loss)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p("\nChosen: %s — %s", r.Transport, r.ChoiceReason)
	if r.Switches > 0 {
		p(" (%d switch(es) during the test)", r.Switches)
	}
	p("\nWebRTC candidates: local %s, remote %s", r.LocalCand, r.RemoteCand)
	if r.LocalCand == "relay" || r.RemoteCand == "relay" {
		p(" (relayed through TURN)")
	}
	p("\n\nTest messages (%d bytes each way):\n", r.MessageSize)
	p("  sent %d (%.1f/s, %.1f kB/s), received %d (%.1f/s, %.1f kB/s)\n", r.Sent, r.TxMsgsPerS, r.TxKBps, r.Received, r.RxMsgsPerS, r.RxKBps)
	p("  loss %.2f%%, duplicates %d, reordered %d, late %d", r.LossPct, r.Duplicates, r.Reordered, r.Late)
	if r.Corrupt > 0 {
		p(", CORRUPT %d", r.Corrupt)
	}
	p("\n\nClock offset to the peer: %+.3f ms ± %.3f ms", r.ClockOffsetMs, r.ClockUncMs)
	if !r.ClockSynced {
		p(" (not yet converged)")
	}
	p("\n")
	if len(r.Events) > 0 {
		p("\nEvents:\n")
		for _, e := range r.Events {
			p("  %s\n", e)
		}
	}
	p("\nVerdict: %s — %s\n", strings.ToUpper(r.Verdict), r.VerdictReason)
	p("  (good: RTT p95 ≤ %g ms, jitter ≤ %g ms, loss ≤ %g%%; playable: ≤ %g ms, ≤ %g ms, ≤ %g%%; else poor)\n",
		thresholds[0].RTTP95Ms, thresholds[0].JitterMs, thresholds[0].LossPct,
		thresholds[1].RTTP95Ms, thresholds[1].JitterMs, thresholds[1].LossPct)
	return nil
}

func fmtProbes(p [3]float64) string {
	s := make([]string, 3)
	for i, v := range p {
		if v == 0 {
			s[i] = "lost"
		} else {
			s[i] = fmt.Sprintf("%.2f", v)
		}
	}
	return strings.Join(s, ", ") + " ms"
}
