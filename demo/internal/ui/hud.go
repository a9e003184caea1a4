package ui

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/text/v2"
	"github.com/hajimehoshi/ebiten/v2/vector"
	"golang.org/x/image/font/basicfont"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
)

// face is the HUD's bitmap font; text/v2 draws it from the top-left of the line.
var face = text.NewGoXFace(basicfont.Face7x13)

const lineH = 15

// say draws s (may hold newlines) with its top at y, scaled by size,
// left-aligned at x or centred on x.
func say(dst *ebiten.Image, s string, x, y float64, size float64, col color.Color, centre bool) {
	for i, line := range strings.Split(s, "\n") {
		op := &text.DrawOptions{}
		lx := x
		if centre {
			lx -= float64(len([]rune(line))) * 7 * size / 2
		}
		op.GeoM.Scale(size, size)
		op.GeoM.Translate(lx, y+float64(i)*lineH*size)
		op.ColorScale.ScaleWithColor(col)
		text.Draw(dst, line, face, op)
	}
}

// panel draws a translucent box behind centred lines of text.
func panel(dst *ebiten.Image, in []string, inCols []color.Color, y float64, size float64) {
	var lines []string
	var cols []color.Color
	for i, l := range in {
		for _, part := range strings.Split(l, "\n") {
			lines = append(lines, part)
			var c color.Color
			if i < len(inCols) {
				c = inCols[i]
			}
			cols = append(cols, c)
		}
	}
	w := 0
	for _, l := range lines {
		w = max(w, len([]rune(l)))
	}
	pw := float32(float64(w)*7*size + 40)
	ph := float32(float64(len(lines))*lineH*size + 24)
	vector.FillRect(dst, float32(screenW/2)-pw/2, float32(y)-12, pw, ph, colPanel, false)
	for i, l := range lines {
		col := color.Color(colText)
		if i < len(cols) && cols[i] != nil {
			col = cols[i]
		}
		say(dst, l, screenW/2, y+float64(i)*lineH*size, size, col, true)
	}
}

func hpBar(dst *ebiten.Image, x, y, w, h float32, hp, maxHP int, rightToLeft bool) {
	vector.FillRect(dst, x, y, w, h, colHPBack, false)
	f := float32(0)
	if maxHP > 0 {
		f = float32(hp) / float32(maxHP)
	}
	fw := w * max(0, min(1, f))
	if rightToLeft {
		vector.FillRect(dst, x+w-fw, y, fw, h, colHPFront, false)
	} else {
		vector.FillRect(dst, x, y, fw, h, colHPFront, false)
	}
	vector.StrokeRect(dst, x, y, w, h, 1, colDim, false)
}

func clock(d time.Duration) string {
	s := int(math.Ceil(d.Seconds()))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// drawTopBar draws both HP bars, the round timer and a one-line link status.
func (g *Game) drawTopBar(dst *ebiten.Image, pl *game.Player) {
	vector.FillRect(dst, 0, 0, screenW, topBar, colBar, false)
	w := pl.World()
	r := pl.Rules()
	now := pl.Now()
	me := int(pl.Me())
	res, decided := r.Result()
	for peer := 1; peer <= 2; peer++ {
		f := w.Fighter(game.FighterOf(ownership.PeerID(peer)))
		hp := f.HP()
		if decided {
			hp = res.HP[peer-1]
		}
		who := "rival"
		if peer == me {
			who = "you"
		}
		label := fmt.Sprintf("P%d (%s)  %d/%d", peer, who, hp, f.MaxHP())
		x := float32(20)
		if peer == 2 {
			x = screenW - 20 - 460
		}
		vector.FillRect(dst, x-10, 10, 6, 24, colFighter[peer], false)
		hpBar(dst, x, 10, 460, 24, hp, f.MaxHP(), peer == 2)
		tx := float64(x) + 8
		if peer == 2 {
			tx = float64(x) + 460 - 8 - float64(len(label))*7
		}
		say(dst, label, tx, 15, 1, colText, false)
	}
	n, _, _ := r.Round()
	if n > 0 {
		say(dst, clock(r.Remaining(now)), screenW/2, 6, 2, colText, true)
		say(dst, fmt.Sprintf("round %d", n), screenW/2, 36, 1, colDim, true)
	}
	ls := pl.Session().Stats()
	status := fmt.Sprintf("%s | rtt %.1f ms | F1 net HUD | F2 ghost", game.PathOf(&ls), float64(ls.RTT.Smoothed)/1e6)
	say(dst, status, 20, 44, 1, colDim, false)
}

// drawRoundBanner shows the countdown, FIGHT!, and the result with the
// rematch state.
func (g *Game) drawRoundBanner(dst *ebiten.Image, pl *game.Player) {
	r := pl.Rules()
	now := pl.Now()
	n, start, _ := r.Round()
	switch r.Phase(now) {
	case game.PhaseWaiting:
		panel(dst, []string{"Connected. Waiting for the host to start the round..."}, nil, 300, 1.5)
	case game.PhaseCountdown:
		left := r.CountdownLeft(now)
		panel(dst, []string{fmt.Sprintf("Round %d", n), fmt.Sprintf("%d", int(math.Ceil(left.Seconds())))}, nil, 260, 3)
	case game.PhaseFight:
		if now.Sub(start) < 800*time.Millisecond {
			panel(dst, []string{"FIGHT!"}, []color.Color{colWarn}, 280, 4)
		}
	case game.PhaseOver:
		res, ok := r.Result()
		if !ok {
			panel(dst, []string{"Round over - agreeing on the result with the rival..."}, nil, 300, 1.5)
			return
		}
		me := pl.Me()
		head, col := "DRAW", color.Color(colWarn)
		switch res.Winner {
		case me:
			head, col = "YOU WIN", colGood
		case 0:
		default:
			head, col = "YOU LOSE", colBad
		}
		how := "on time"
		if res.By == game.EndKO {
			how = "by KO"
			if res.Winner == 0 {
				how = "double KO"
			}
		}
		lines := []string{head + " " + how, fmt.Sprintf("HP %d - %d", res.HP[0], res.HP[1])}
		cols := []color.Color{col, colText}
		switch {
		case r.WantsRematch() && r.RivalWantsRematch():
			lines = append(lines, "Rematch! Starting...")
		case r.WantsRematch():
			lines = append(lines, "Waiting for the rival to accept the rematch...")
		case r.RivalWantsRematch():
			lines = append(lines, "The rival wants a rematch: press R or Enter")
			cols = append(cols, colWarn)
		default:
			lines = append(lines, "Press R or Enter for a rematch")
		}
		panel(dst, lines, cols, 240, 2)
	}
}

// drawStatus covers everything before and after a match: finding the
// server, waiting for a rival, connecting, rival lost, failures.
func (g *Game) drawStatus(dst *ebiten.Image) bool {
	a := g.app
	switch a.Setup() {
	case game.SetupRunning:
		panel(dst, []string{"Looking for a signaling server..."}, nil, 320, 1.5)
		return true
	case game.SetupFailed:
		panel(dst, []string{"Cannot start:", wrap(a.Err().Error(), 80), "Esc to quit"}, []color.Color{colBad}, 280, 1.5)
		return true
	}
	pl := a.Local()
	var lines []string
	var cols []color.Color
	add := func(s string, c color.Color) { lines = append(lines, s); cols = append(cols, c) }
	switch pl.Status() {
	case game.StatusConnected, game.StatusInterrupted:
		if pl.Match() != nil && pl.Synced() {
			return false
		}
		ls := pl.Session().Stats()
		add("Connected over "+game.PathOf(&ls), colGood)
		add("Synchronising clocks...", colText)
	case game.StatusLost:
		add("Rival lost", colBad)
		if err := pl.Err(); err != nil {
			add(wrap(err.Error(), 90), colDim)
		}
		add("Press Enter to look for a new rival, Esc to quit", colText)
	case game.StatusFailed:
		add("Pairing failed", colBad)
		if err := pl.Err(); err != nil {
			add(wrap(err.Error(), 90), colDim)
		}
		add("Press Enter to try again, Esc to quit", colText)
	default:
		g.waitingLines(add)
	}
	panel(dst, lines, cols, 200, 1.5)
	return true
}

// waitingLines says what we are waiting for and how the rival can join.
func (g *Game) waitingLines(add func(string, color.Color)) {
	a := g.app
	pl := a.Local()
	cfg := a.Config()
	room := pl.Room()
	switch {
	case cfg.Bot:
		add("Starting a bot rival...", colText)
	case cfg.Room == "new" && room == "":
		add("Creating a private room...", colText)
	case cfg.Room == "new":
		add("Private room "+room+" - waiting for a rival", colWarn)
	case cfg.Room != "":
		add("Room "+cfg.Room+" - waiting for the rival who has the same code", colWarn)
	default:
		add("Waiting for a rival (quick match)...", colWarn)
	}
	if pl.Status() == game.StatusConnecting {
		add("connecting to "+a.SignalURL(), colDim)
	} else {
		add("signaling server "+a.SignalURL(), colDim)
	}
	if cfg.Bot {
		return
	}
	roomArg := ""
	if room != "" {
		roomArg = " -room " + room
	}
	add("", nil)
	add("A rival on this machine:  go run ./demo"+roomArg, colText)
	emb, addr := a.Embedded()
	share := a.ShareURLs()
	switch {
	case len(share) > 0:
		for _, u := range share {
			add("On another machine:  go run ./demo -signal "+u+roomArg, colText)
		}
		if !cfg.LAN {
			add("(for WebRTC between machines, start the host with -lan; otherwise the TCP relay is used)", colDim)
		}
	case emb && (strings.HasPrefix(addr, "127.") || strings.HasPrefix(addr, "[::1]")):
		add("(the signaling server listens on "+addr+": this machine only; -listen :8080 lets other machines in)", colDim)
	case emb:
		add("(the signaling server listens on "+addr+", but this machine has no network address besides loopback)", colDim)
	case !strings.Contains(a.SignalURL(), "127.0.0.1") && !strings.Contains(a.SignalURL(), "localhost"):
		add("On another machine:  go run ./demo -signal "+a.SignalURL()+roomArg, colText)
	default:
		add("(another demo on this machine runs the signaling server; it shows the address for other machines)", colDim)
	}
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		i := strings.LastIndex(s[:n], " ")
		if i <= 0 {
			i = n
		}
		b.WriteString(s[:i])
		b.WriteString("\n")
		s = strings.TrimLeft(s[i:], " ")
	}
	b.WriteString(s)
	return b.String()
}

// drawNetHUD is the F1 diagnostics panel: a rolling graph of RTT, state
// age, jitter and loss, and the link figures.
func (g *Game) drawNetHUD(dst *ebiten.Image, pl *game.Player) {
	const x, y, w, h = 16, topBar + 12, 640, 300
	vector.FillRect(dst, x, y, w, h, colPanel, false)
	ls := pl.Session().Stats()
	d := pl.Diag()
	ms := func(t time.Duration) float64 { return float64(t) / 1e6 }
	rms, mx := d.CurrentError()
	age, ageJ := d.StateAge()
	path := game.PathOf(&ls)
	pathCol := color.Color(colText)
	if strings.Contains(path, "RELAYED") || ls.Transport == p2p.TransportTCP {
		pathCol = colWarn
	}
	lines := []struct {
		s string
		c color.Color
	}{
		{fmt.Sprintf("%s  (switches %d, %s)", path, ls.Switches, ls.State), pathCol},
		{fmt.Sprintf("RTT  last %.2f  min %.2f  smoothed %.2f  p95 %.2f ms", ms(ls.RTT.Last), ms(ls.RTT.Min), ms(ls.RTT.Smoothed), ms(ls.RTT.P95)), colText},
		{fmt.Sprintf("jitter in %.2f  out %.2f ms | loss link %.1f%% (total %.1f%%) | rival states missing %.1f%%",
			ms(ls.Jitter), ms(ls.JitterOut), 100*ls.LossRecent, 100*ls.Loss, 100*d.StateLoss()), colText},
		{fmt.Sprintf("rival states %.1f ms old +/- %.1f (game clock, incl. one tick of polling)", ms(age), ms(ageJ)), colText},
		{fmt.Sprintf("clock offset %+.3f +/- %.3f ms%s", ms(ls.ClockOffset), ms(ls.ClockUncertainty), map[bool]string{true: "", false: " (not converged)"}[ls.ClockSynced]), colText},
		{fmt.Sprintf("tx %.0f pkt/s %.1f kB/s | rx %.0f pkt/s %.1f kB/s", ls.TxPacketsPerSec, ls.TxBytesPerSec/1000, ls.RxPacketsPerSec, ls.RxBytesPerSec/1000), colText},
		{fmt.Sprintf("rival correction error rms %.1f cm  max %.1f cm | hard snaps %.2f/s", 100*rms, 100*mx, d.HardSnapsPerSec()), colText},
	}
	if imp := g.app.Config(); imp.Lag > 0 || imp.Jitter > 0 || imp.Loss > 0 {
		lines = append(lines, struct {
			s string
			c color.Color
		}{fmt.Sprintf("impairment (netsim, each way): %s", pl.Summary().Impair), colWarn})
	}
	for i, l := range lines {
		say(dst, l.s, x+8, y+6+float64(i)*lineH, 1, l.c, false)
	}
	// The graph.
	gy := float32(y + 6 + len(lines)*lineH + 8)
	gh := float32(y+h) - gy - 22
	gx, gw := float32(x+8), float32(w-16)
	vector.FillRect(dst, gx, gy, gw, gh, color.RGBA{0, 0, 0, 120}, false)
	g.samples = d.Graph(g.samples)
	top := 20.0 // ms, at least
	for _, s := range g.samples {
		top = math.Max(top, math.Max(ms(s.RTT), ms(s.StateAge))*1.2)
	}
	step := gw / float32(game.GraphLen-1)
	yOf := func(v float64) float32 { return gy + gh - float32(v/top)*gh }
	lossH := gh / 4 // loss: 0..25% over the bottom quarter
	series := []struct {
		c color.RGBA
		v func(game.Sample) float64
	}{
		{color.RGBA{90, 200, 255, 255}, func(s game.Sample) float64 { return ms(s.RTT) }},
		{color.RGBA{255, 210, 90, 255}, func(s game.Sample) float64 { return ms(s.StateAge) }},
		{color.RGBA{200, 120, 255, 255}, func(s game.Sample) float64 { return ms(s.Jitter) }},
	}
	for i, s := range g.samples {
		x0 := gx + float32(i)*step
		if s.Loss > 0 {
			lh := min(lossH, float32(s.Loss/0.25)*lossH)
			vector.FillRect(dst, x0, gy+gh-lh, max(step-1, 1), lh, color.RGBA{255, 80, 80, 200}, false)
		}
		if i == 0 {
			continue
		}
		p := g.samples[i-1]
		for _, se := range series {
			vector.StrokeLine(dst, x0-step, yOf(se.v(p)), x0, yOf(se.v(s)), 1.5, se.c, true)
		}
	}
	say(dst, fmt.Sprintf("%.0f ms", top), float64(gx+gw-50), float64(gy)+2, 1, colDim, false)
	ly := float64(gy + gh + 4)
	say(dst, "rtt", float64(gx), ly, 1, color.RGBA{90, 200, 255, 255}, false)
	say(dst, "state age", float64(gx)+40, ly, 1, color.RGBA{255, 210, 90, 255}, false)
	say(dst, "jitter", float64(gx)+120, ly, 1, color.RGBA{200, 120, 255, 255}, false)
	say(dst, "loss (0-25%)", float64(gx)+180, ly, 1, color.RGBA{255, 80, 80, 255}, false)
	say(dst, fmt.Sprintf("last %d s", game.GraphLen*game.SampleTicks/60), float64(gx+gw-70), ly, 1, colDim, false)
}
