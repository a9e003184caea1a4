//go:build !js

package game

// watchVisibility: only a browser's page has a visibility.
func (a *App) watchVisibility() {}
