package ui

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
)

// Text is drawn after the shapes of its layer (Game.Draw flushes the batch
// first), so a panel's box is always under its words.

// textItem is one line queued for the text pass.
type textItem struct {
	s      string
	x, y   float64
	size   float64
	col    color.Color
	centre bool
}

// say queues a line of text (no newlines) with its top at y.
func (g *Game) say(s string, x, y, size float64, col color.Color, centre bool) {
	g.texts = append(g.texts, textItem{s, x, y, size, col, centre})
}

// panel draws a translucent box centred on cx with its top at y, around
// lines of text (each line with its colour, nil: colText).
func (g *Game) panel(dst *ebiten.Image, lines []hudLine, cx, y, size float64) {
	w := 0.0
	for _, l := range lines {
		w = math.Max(w, textWidth(l.s, size))
	}
	pw := w + 40
	ph := float64(len(lines))*lineH*size + 24
	g.batch.rect(dst, float32(cx-pw/2), float32(y-12), float32(pw), float32(ph), colPanel)
	for i, l := range lines {
		col := l.c
		if col == nil {
			col = colText
		}
		g.say(l.s, cx, y+float64(i)*lineH*size, size, col, true)
	}
}

func hpBar(b *batch, dst *ebiten.Image, x, y, w, h float32, hp, maxHP int, rightToLeft bool, flash float32) {
	b.rect(dst, x, y, w, h, colHPBack)
	f := float32(0)
	if maxHP > 0 {
		f = float32(hp) / float32(maxHP)
	}
	fw := w * max(0, min(1, f))
	front := mix(colHPFront, colSparkHi, 0.7*flash)
	if f < 0.3 {
		front = mix(colBad, colSparkHi, 0.7*flash)
	}
	if rightToLeft {
		b.rect(dst, x+w-fw, y, fw, h, front)
	} else {
		b.rect(dst, x, y, fw, h, front)
	}
	b.strokeRect(dst, x, y, w, h, 1, colDim)
}

func clock(d time.Duration) string {
	s := int(math.Ceil(d.Seconds()))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// drawTopBar draws both HP bars (the rival labelled a bot when it is
// one), the round timer and a one-line link status with the keys.
func (g *Game) drawTopBar(dst *ebiten.Image, pl *game.Player) {
	b := g.batch
	b.rect(dst, 0, 0, screenW, topBar, colBar)
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
		switch {
		case peer == me:
			who = "you"
		case g.app.RivalIsBot():
			who = "bot, " + g.app.Config().Bot.String()
		}
		label := fmt.Sprintf("P%d (%s)  %d/%d", peer, who, hp, f.MaxHP())
		x := float32(20)
		if peer == 2 {
			x = screenW - 20 - 460
		}
		b.rect(dst, x-10, 10, 6, 24, colFighter[peer])
		hpBar(b, dst, x, 10, 460, 24, hp, f.MaxHP(), peer == 2, g.view.flash[peer])
		tx := float64(x) + 8
		if peer == 2 {
			tx = float64(x) + 460 - 8 - textWidth(label, 1)
		}
		g.say(label, tx, 15, 1, colText, false)
	}
	n, _, _ := r.Round()
	if n > 0 {
		g.say(clock(r.Remaining(now)), screenW/2, 6, 2, colText, true)
		g.say(fmt.Sprintf("round %d", n), screenW/2, 36, 1, colDim, true)
	}
	status := "the rival is gone"
	if pl.Status() == game.StatusReconnecting {
		status = fmt.Sprintf("rival reconnecting (%d s)", int(pl.ReconnectingFor().Seconds()))
	}
	if st := pl.Status(); st == game.StatusConnected || st == game.StatusInterrupted {
		ls := pl.Session().Stats()
		rtt := "measuring" // no round trip on this path yet (it just came back)
		if d, _, ok := activeRTT(&ls); ok {
			rtt = fmt.Sprintf("%.1f ms", float64(d)/1e6)
		}
		status = game.PathOf(&ls) + " | rtt " + rtt
	}
	if room := pl.Room(); room != "" {
		status += " | " + spectateHint(g.app, room, pl.Watchers())
	}
	g.say(status, 20, 44, 1, colDim, false)
	keys := "F1 net HUD  F2 ghost  F3/H controls  Esc quit"
	g.say(keys, screenW-20-textWidth(keys, 1), 44, 1, colDim, false)
}

// bannerY is where the round banners go (the top of their first line):
// in the sky above the fighters' heads (the camera keeps frameAbove of it),
// as low as the heads allow but no lower than the middle of the world's
// region, which the HUD never covers (it is drawn below the region). If
// the heads leave no room (a jump), the banner keeps to the region's top.
func (g *Game) bannerY(lines int, size float64) float64 {
	r := g.view.region(g.hud)
	h := float64(lines) * lineH * size
	y := r.y + r.h*0.42 - h/2
	if top := g.view.headsTop; top-bannerGap-12-h < y { // 12: the panel's padding below the text
		y = top - bannerGap - 12 - h
	}
	return math.Max(y, r.y+16)
}

// bannerGap is the room kept between a banner and the heads below it, px.
const bannerGap = 10

// bannerSize shrinks a banner's text size so that lines of it fit above
// the heads (see bannerY), down to min.
func (g *Game) bannerSize(lines int, size, min float64) float64 {
	r := g.view.region(g.hud)
	room := g.view.headsTop - bannerGap - 12 - (r.y + 16)
	if fit := room / (float64(lines) * lineH); fit < size {
		return math.Max(fit, min)
	}
	return size
}

// drawRoundBanner shows the countdown, FIGHT!, the KO moment and the
// result with the rematch state.
func (g *Game) drawRoundBanner(dst *ebiten.Image, pl *game.Player) {
	r := pl.Rules()
	now := pl.Now()
	n, start, _ := r.Round()
	one := func(s string, c color.Color, size float64) {
		size = g.bannerSize(1, size, 1.5)
		g.panel(dst, []hudLine{{s, c}}, screenW/2, g.bannerY(1, size), size)
	}
	if v := g.view; v.koPeer != 0 && v.koTicks < koBanner {
		size := 8.0
		if v.koTicks < 8 {
			size = 12 - float64(v.koTicks)/2
		}
		size = g.bannerSize(1, size, 3)
		y := g.bannerY(1, size)
		g.say("K.O.", screenW/2+4, y+4, size, colOutline, true)
		g.say("K.O.", screenW/2, y, size, colBad, true)
		return
	}
	switch r.Phase(now) {
	case game.PhaseWaiting:
		one("Connected. Waiting for the host to start the round...", nil, 2)
	case game.PhaseCountdown:
		left := r.CountdownLeft(now)
		size := g.bannerSize(2, 3, 1.5)
		g.panel(dst, []hudLine{{fmt.Sprintf("Round %d", n), nil}, {fmt.Sprintf("%d", int(math.Ceil(left.Seconds()))), colWarn}},
			screenW/2, g.bannerY(2, size), size)
	case game.PhaseFight:
		if now.Sub(start) < 800*time.Millisecond {
			one("FIGHT!", colWarn, 5)
		}
	case game.PhaseOver:
		res, ok := r.Result()
		if !ok {
			one("Round over - agreeing on the result with the rival...", nil, 2)
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
		lines := []hudLine{{head + " " + how, col}, {fmt.Sprintf("HP %d - %d", res.HP[0], res.HP[1]), nil}}
		switch {
		case r.WantsRematch() && r.RivalWantsRematch():
			lines = append(lines, hudLine{"Rematch! Starting...", nil})
		case r.WantsRematch():
			lines = append(lines, hudLine{"Waiting for the rival to accept the rematch...", nil})
		case r.RivalWantsRematch():
			lines = append(lines, hudLine{"The rival wants a rematch: press R or Enter", colWarn})
		default:
			lines = append(lines, hudLine{"Press R or Enter for a rematch", nil})
		}
		size := g.bannerSize(len(lines), 2, 1)
		g.panel(dst, lines, screenW/2, g.bannerY(len(lines), size), size)
	}
}

// controlsLines is the controls panel (F3 or H).
var controlsLines = []hudLine{
	{"CONTROLS", colWarn},
	{"A / D  or  Left / Right   walk", nil},
	{"W  or  Up                 jump", nil},
	{"S  or  Down               block", nil},
	{"J                         punch", nil},
	{"K                         kick", nil},
	{"R  or  Enter              rematch", nil},
	{"F1 net HUD   F2 ghost", colDim},
	{"F3 or H  hide this   Esc quit", colDim},
}

// drawControls draws the controls panel at the bottom right of the world's
// region, clear of the banners (centred) and of the HUD (below).
func (g *Game) drawControls(dst *ebiten.Image) {
	r := g.view.region(g.hud)
	w := 0.0
	for _, l := range controlsLines {
		w = math.Max(w, textWidth(l.s, 1))
	}
	pw, ph := w+24, float64(len(controlsLines))*lineH+16
	x, y := screenW-pw-12, r.y+r.h-ph-12
	g.batch.rect(dst, float32(x), float32(y), float32(pw), float32(ph), colPanel)
	for i, l := range controlsLines {
		col := l.c
		if col == nil {
			col = colText
		}
		g.say(l.s, x+12, y+8+float64(i)*lineH, 1, col, false)
	}
}

// drawStatus covers everything before and after a match: finding the
// server, waiting for a rival, connecting, rival lost, failures; every
// trouble in a sentence with what to do next. It reports whether it drew
// (then there is no match to show).
func (g *Game) drawStatus(dst *ebiten.Image) bool {
	a := g.app
	var lines []hudLine
	add := func(s string, c color.Color) {
		for _, part := range strings.Split(wrap(s, 72), "\n") {
			lines = append(lines, hudLine{part, c})
		}
	}
	show := func() bool {
		g.panel(dst, lines, screenW/2, 150, 1.5)
		return true
	}
	switch a.Setup() {
	case game.SetupRunning:
		add("Looking for a signaling server...", colText)
		return show()
	case game.SetupFailed:
		what, next := game.Explain(a.Err())
		add("Cannot start: "+what, colBad)
		add(next, colText)
		add("Esc to quit", colDim)
		return show()
	case game.SetupHosting:
		add("Starting a signaling server on this machine...", colText)
		return show()
	}
	pl := a.Local()
	switch pl.Status() {
	case game.StatusReconnecting:
		return false // the match stays on screen, paused (see Draw)
	case game.StatusConnected, game.StatusInterrupted:
		if pl.Match() != nil && pl.Synced() {
			return false
		}
		ls := pl.Session().Stats()
		add("Connected over "+game.PathOf(&ls), colGood)
		add("Synchronising clocks...", colText)
	case game.StatusLost, game.StatusFailed:
		what, next := game.Explain(pl.Err())
		if pl.Status() == game.StatusLost {
			add("Rival lost: "+what, colBad)
		} else {
			add(what, colBad)
		}
		if a.ServerGone() {
			add("The signaling server at "+a.SignalURL()+" does not answer any more: "+
				"the player who hosted it has probably quit.", colWarn)
			add("Press Enter to host a game on this machine (your rival then joins you), "+
				"or Esc to quit and start again with -signal pointing at another server.", colText)
		} else {
			if pl.Status() == game.StatusLost && pl.Room() != "" && a.Config().Room != "" {
				add("Press Enter to wait for a rival in room "+pl.Room()+" again (the same code), Esc to quit.", colText)
			} else if next != "" {
				add(next, colText)
			}
		}
	default:
		g.waitingLines(add)
	}
	return show()
}

// waitingLines says what we are waiting for and how the rival can join.
func (g *Game) waitingLines(add func(string, color.Color)) {
	a := g.app
	pl := a.Local()
	cfg := a.Config()
	room := pl.Room()
	switch {
	case cfg.Bot != game.BotOff:
		add("Starting a bot rival ("+cfg.Bot.String()+")...", colText)
	case cfg.Room == "new" && room == "":
		add("Creating a private room...", colText)
	case pl.NobodyInRoom():
		add("Nobody was waiting in room "+room+".", colWarn)
		add("If your rival created a room, check the code on their screen (Esc, then -room CODE). "+
			"Otherwise you are now waiting in room "+room+": your rival joins with -room "+room+".", colText)
	case cfg.Room != "":
		add("Room "+room+" - waiting for the rival who has the same code", colWarn)
	default:
		add("Waiting for a rival (quick match)...", colWarn)
	}
	if pl.Status() == game.StatusConnecting {
		add("connecting to "+a.SignalURL(), colDim)
	} else {
		add("signaling server "+a.SignalURL(), colDim)
	}
	if cfg.Bot != game.BotOff {
		return
	}
	if inBrowser {
		add("", nil)
		if room != "" {
			add("Send your rival the link below the game (Copy): it opens this page in room "+room+".", colText)
		} else {
			add("Send your rival the link below the game (Copy): whoever opens it is paired with you.", colText)
		}
		add("A native player joins with:  go run ./demo -signal "+a.SignalURL()+roomArgOf(room), colDim)
		return
	}
	roomArg := ""
	if room != "" {
		roomArg = " -room " + room
	}
	add("", nil)
	add("A rival on this machine:  go run ./demo"+roomArg, colText)
	if room != "" {
		add("Spectators:  go run ./demo -signal "+a.SignalURL()+" -spectate "+room+"   or open "+spectateLink(a, room), colDim)
	}
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
		add("(the signaling server listens on "+addr+": this machine only; start with -listen :8080 to let other machines in)", colDim)
	case emb:
		add("(the signaling server listens on "+addr+", but this machine has no network address besides loopback)", colDim)
	case !game.IsLoopbackURL(a.SignalURL()):
		add("On another machine:  go run ./demo -signal "+a.SignalURL()+roomArg, colText)
	default:
		add("(another demo on this machine runs the signaling server; it shows the address for other machines)", colDim)
	}
}

// spectateLink is the browser link that watches room.
func spectateLink(a *game.App, room string) string {
	return strings.TrimSuffix(a.SignalURL(), "/") + "/?spectate=" + room
}

// spectateHint is the fight screen's line on spectating: how many watch,
// and how to.
func spectateHint(a *game.App, room string, watching int) string {
	link := strings.TrimPrefix(strings.TrimPrefix(spectateLink(a, room), "http://"), "https://")
	return fmt.Sprintf("%d watching | -spectate %s | %s", watching, room, link)
}

func roomArgOf(room string) string {
	if room == "" {
		return ""
	}
	return " -room " + room
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

// activeLink returns the statistics of the session's active transport.
func activeLink(ls *p2p.Stats) *p2p.LinkStats {
	if ls.Transport == p2p.TransportTCP {
		return &ls.TCP
	}
	return &ls.WebRTC
}

// activeRTT is the round trip to show for the active transport: the
// smoothed figure of its pings; until it has one (the session leaves out
// round trips that span a stall of this process, which a busy machine
// running a relayed match has often), the largest of its last three pings,
// then its initial probes. ok is false if it has none of them.
func activeRTT(ls *p2p.Stats) (d time.Duration, how string, ok bool) {
	l := activeLink(ls)
	switch {
	case ls.RTT.Samples > 0:
		return ls.RTT.Smoothed, "smoothed", true
	case l.Last3Max > 0:
		return l.Last3Max, "max of the last 3 pings", true
	case l.ProbeMax > 0:
		return l.ProbeMax, "initial probes", true
	}
	return 0, "", false
}

// netLines builds the net HUD's figures (from Update, hudEvery ticks).
func netLines(a *game.App, pl *game.Player, dst []hudLine) []hudLine {
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
	tps, fps := a.Rates()
	conv := ""
	if !ls.ClockSynced {
		conv = " (not converged)"
	}
	var rtt string
	switch d, how, ok := activeRTT(&ls); {
	case ls.RTT.Samples > 0:
		rtt = fmt.Sprintf("RTT  last %.2f  min %.2f  smoothed %.2f  p95 %.2f ms", ms(ls.RTT.Last), ms(ls.RTT.Min), ms(ls.RTT.Smoothed), ms(ls.RTT.P95))
	case ok:
		rtt = fmt.Sprintf("RTT  %.2f ms (%s)", ms(d), how)
	default:
		l := activeLink(&ls)
		rtt = fmt.Sprintf("RTT  measuring: %d pings sent, %d answered on this path", l.PingsSent, l.PongsReceived)
	}
	dst = append(dst,
		hudLine{fmt.Sprintf("%s  (switches %d, %s)", path, ls.Switches, ls.State), pathCol},
		hudLine{rtt, nil},
		hudLine{fmt.Sprintf("jitter in %.2f  out %.2f ms | link loss %.1f%% (total %.1f%%) | rival states lost %.1f%% (by sequence number)",
			ms(ls.Jitter), ms(ls.JitterOut), 100*ls.LossRecent, 100*ls.Loss, 100*d.StateLoss()), nil},
		hudLine{fmt.Sprintf("rival states %.1f ms old +/- %.1f on arrival (game clock) | rival sends %.0f states/s", ms(age), ms(ageJ), d.StateRate()), nil},
		hudLine{fmt.Sprintf("clock offset %+.3f +/- %.3f ms%s | game %.0f ticks/s, %.0f frames/s", ms(ls.ClockOffset), ms(ls.ClockUncertainty), conv, tps, fps), nil},
		hudLine{fmt.Sprintf("tx %.0f pkt/s %.1f kB/s | rx %.0f pkt/s %.1f kB/s", ls.TxPacketsPerSec, ls.TxBytesPerSec/1000, ls.RxPacketsPerSec, ls.RxBytesPerSec/1000), nil},
		hudLine{fmt.Sprintf("rival correction error rms %.1f cm  max %.1f cm | hard snaps %.2f/s", 100*rms, 100*mx, d.HardSnapsPerSec()), nil},
	)
	if imp := a.Config(); imp.Lag > 0 || imp.Jitter > 0 || imp.Loss > 0 {
		dst = append(dst, hudLine{"impairment (netsim, each way): " + pl.Summary().Impair, colWarn})
	}
	return dst
}

// Graph series colours.
var (
	colRTT    = color.RGBA{90, 200, 255, 255}
	colAge    = color.RGBA{255, 210, 90, 255}
	colJitter = color.RGBA{200, 120, 255, 255}
	colLoss   = color.RGBA{255, 80, 80, 200}
)

// drawNetHUD is the F1 diagnostics panel, below the world: the link
// figures and a rolling graph (wall time) of RTT, state age, jitter and
// loss.
func (g *Game) drawNetHUD(dst *ebiten.Image) {
	v := g.view
	b := g.batch
	const x, w = 0, screenW
	y := float64(screenH - hudH)
	// The HUD's background is the screen's clear colour: no pixels filled
	// twice (see drawWorld).
	b.rect(dst, x, float32(y), w, 2, colDim)
	for i, l := range v.hudLines {
		col := l.c
		if col == nil {
			col = colText
		}
		g.say(l.s, x+12, y+8+float64(i)*lineH, 1, col, false)
	}
	gy := float32(y) + 8 + float32(len(v.hudLines))*lineH + 6
	gh := float32(screenH) - gy - 22
	gx, gw := float32(x+12), float32(w-24)
	b.strokeRect(dst, gx, gy, gw, gh, 1, colPanel)
	ms := func(t time.Duration) float64 { return float64(t) / 1e6 }
	top := 20.0 // ms, at least
	for _, s := range v.samples {
		top = math.Max(top, math.Max(ms(s.RTT), ms(s.StateAge))*1.2)
	}
	step := gw / float32(game.GraphLen-1)
	yOf := func(val float64) float32 { return gy + gh - float32(math.Min(val/top, 1))*gh }
	lossH := gh / 4 // loss: 0..25% over the bottom quarter
	for i, s := range v.samples {
		x0 := gx + float32(i)*step
		if s.Loss > 0 {
			lh := min(lossH, float32(s.Loss/0.25)*lossH)
			b.rect(dst, x0, gy+gh-lh, max(step-1, 1), lh, colLoss)
		}
		if i == 0 {
			continue
		}
		p := v.samples[i-1]
		b.line(dst, x0-step, yOf(ms(p.Jitter)), x0, yOf(ms(s.Jitter)), 2, colJitter)
		b.line(dst, x0-step, yOf(ms(p.StateAge)), x0, yOf(ms(s.StateAge)), 2, colAge)
		b.line(dst, x0-step, yOf(ms(p.RTT)), x0, yOf(ms(s.RTT)), 2, colRTT)
	}
	g.say(fmt.Sprintf("%.0f ms", top), float64(gx+gw-60), float64(gy)+2, 1, colDim, false)
	ly := float64(gy + gh + 4)
	g.say("rtt", float64(gx), ly, 1, colRTT, false)
	g.say("state age", float64(gx)+40, ly, 1, colAge, false)
	g.say("jitter", float64(gx)+120, ly, 1, colJitter, false)
	g.say("loss (0-25%)", float64(gx)+180, ly, 1, colLoss, false)
	g.say(fmt.Sprintf("last %.0f s (wall clock)", (time.Duration(game.GraphLen)*game.SampleEvery).Seconds()), float64(gx+gw-170), ly, 1, colDim, false)
}
