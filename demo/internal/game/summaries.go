package game

import "encoding/json"

// logSummaries logs each player's summary as one JSON line ("summary"),
// the figures a headless run prints at its end.
func (a *App) logSummaries() {
	for _, p := range []*Player{a.local, a.bot} {
		if p == nil {
			continue
		}
		b, err := json.Marshal(p.Summary())
		if err != nil {
			continue
		}
		a.log.Info("summary", "player", p.Name(), "json", string(b))
	}
}
