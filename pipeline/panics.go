package pipeline

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// recoverAs, deferred at the top of a goroutine of the engine, turns a
// panic of that goroutine into *err, so that a panic in the engine, or
// in a source, sink or other user code the goroutine calls, ends the run
// with an error instead of the process; the stack goes to log at Error
// level. what names the goroutine ("the reader", "window task 1 of stage
// 0", ...).
func recoverAs(what string, log *slog.Logger, err *error) {
	v := recover()
	if v == nil {
		return
	}
	if log != nil {
		log.Error("volga: panic", slog.String("in", what), slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
	}
	*err = fmt.Errorf("volga: panic in %s: %v", what, v)
}
