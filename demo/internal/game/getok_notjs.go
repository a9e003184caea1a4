//go:build !js

package game

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// getOK checks that a GET of url answers 200 OK within timeout. It uses
// its own client without keep-alives, so it leaves no connection (or
// goroutine) behind.
func getOK(ctx context.Context, url string, timeout time.Duration) error {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: timeout, Transport: tr}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answers %s", url, resp.Status)
	}
	return nil
}
