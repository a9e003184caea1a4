//go:build !js

package p2p

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// slogFactory routes pion's logs into a *slog.Logger. pion's error and
// warning lines (mostly about closing connections) are logged at Debug and
// Info: a game session closing is not an error for the application.
type slogFactory struct{ l *slog.Logger }

func (f slogFactory) NewLogger(scope string) logging.LeveledLogger {
	return slogLeveled{l: f.l.With("pion", scope)}
}

type slogLeveled struct{ l *slog.Logger }

func (s slogLeveled) log(level slog.Level, msg string) {
	if s.l.Enabled(context.Background(), level) {
		s.l.Log(context.Background(), level, msg)
	}
}

func (s slogLeveled) logf(level slog.Level, format string, args ...any) {
	if s.l.Enabled(context.Background(), level) {
		s.l.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

const levelTrace = slog.LevelDebug - 4

func (s slogLeveled) Trace(msg string)                  { s.log(levelTrace, msg) }
func (s slogLeveled) Tracef(format string, args ...any) { s.logf(levelTrace, format, args...) }
func (s slogLeveled) Debug(msg string)                  { s.log(levelTrace, msg) }
func (s slogLeveled) Debugf(format string, args ...any) { s.logf(levelTrace, format, args...) }
func (s slogLeveled) Info(msg string)                   { s.log(slog.LevelDebug, msg) }
func (s slogLeveled) Infof(format string, args ...any)  { s.logf(slog.LevelDebug, format, args...) }
func (s slogLeveled) Warn(msg string)                   { s.log(slog.LevelDebug, msg) }
func (s slogLeveled) Warnf(format string, args ...any)  { s.logf(slog.LevelDebug, format, args...) }
func (s slogLeveled) Error(msg string)                  { s.log(slog.LevelInfo, msg) }
func (s slogLeveled) Errorf(format string, args ...any) { s.logf(slog.LevelInfo, format, args...) }
