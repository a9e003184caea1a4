package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/server"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// env is an environment for run.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// started is a run in the background.
type started struct {
	addr   string
	logs   *syncBuf
	cancel context.CancelFunc
	errc   chan error
}

// start runs the command with args and env until the test ends (or stop).
func start(t *testing.T, args []string, e env) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &started{logs: &syncBuf{}, cancel: cancel, errc: make(chan error, 1)}
	addrc := make(chan string, 1)
	if !strings.Contains(strings.Join(args, " "), "-metrics-addr") && e["RAGSYNC_SIGNAL_METRICS_ADDR"] == "" {
		// Not the default port: tests run side by side.
		args = append([]string{"-metrics-addr", "127.0.0.1:0"}, args...)
	}
	go func() {
		st.errc <- run(ctx, args, e.get, st.logs, nil, func(a string) { addrc <- a })
	}()
	select {
	case st.addr = <-addrc:
	case err := <-st.errc:
		cancel()
		t.Fatalf("run: %v\n%s", err, st.logs)
	}
	t.Cleanup(func() { st.stop(t) })
	return st
}

func (st *started) stop(t *testing.T) {
	st.cancel()
	if err := <-st.errc; err != nil {
		t.Errorf("run: %v", err)
	}
	st.errc <- nil // a second stop returns at once
}

// logValue returns the value of key in the first JSON log line with msg.
func (st *started) logValue(t *testing.T, msg, key string) any {
	t.Helper()
	for _, line := range strings.Split(st.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			return m[key]
		}
	}
	t.Fatalf("no log %q in\n%s", msg, st.logs)
	return nil
}

func TestRunServesAndShutsDown(t *testing.T) {
	leaktest.Check(t)
	st := start(t, []string{"-addr", "127.0.0.1:0", "-log-format", "json", "-max-rooms", "1", "-idle-timeout", "30s"}, nil)
	url := "http://" + st.addr
	tctx := testwait.Context(t) // no limit but the test binary's
	a, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if l := a.Limits(); l.IdleTimeoutMS != 30000 {
		t.Fatalf("flags not applied: %+v", l)
	}
	if _, err := a.CreateRoom(tctx); err != nil {
		t.Fatal(err)
	}
	b, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateRoom(tctx); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("-max-rooms 1 not applied: %v", err)
	}
	var hs server.Stats
	if err := json.Unmarshal(get(t, nil, url+"/healthz"), &hs); err != nil || hs.Rooms != 1 || hs.Clients != 2 {
		t.Fatalf("healthz %+v %v", hs, err)
	}
	maddr := st.logValue(t, "metrics listening", "addr").(string)
	if m := get(t, nil, "http://"+maddr+"/metrics"); !bytes.Contains(m, []byte("\nragsync_signal_clients 2\n")) {
		t.Fatalf("metrics:\n%s", m)
	}
	if code := status(t, url+"/metrics", ""); code != 404 {
		t.Fatalf("/metrics on the public address by default: %d", code)
	}
	if !strings.Contains(st.logs.String(), "no -secret") {
		t.Fatal("no warning about the missing secret")
	}

	st.stop(t) // as SIGTERM would
	if _, err := a.Recv(tctx); err == nil {
		// The shutting_down error event may come first.
		if _, err := a.Recv(tctx); !errors.Is(err, signaling.ErrShuttingDown) {
			t.Fatalf("after shutdown: %v", err)
		}
	}
	if !strings.Contains(st.logs.String(), `"msg":"signaling server stopped"`) {
		t.Fatalf("logs:\n%s", st.logs)
	}
}

// get fetches url with a client of its own and returns the body.
func get(t *testing.T, tr *http.Transport, url string) []byte {
	t.Helper()
	if tr == nil {
		tr = &http.Transport{}
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return b
}

// status returns the HTTP status of GET url, with auth as the
// Authorization header if not empty.
func status(t *testing.T, url, auth string) int {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsFlags: the default -metrics-addr is loopback port 9464 (not
// -addr); with -metrics-addr "" and -metrics-token-file (or its
// environment variable), /metrics is on -addr behind the token only.
func TestMetricsFlags(t *testing.T) {
	leaktest.Check(t)
	var out syncBuf
	if err := run(context.Background(), []string{"-help"}, env{}.get, &out, nil, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, want := range []string{"-metrics-addr string  [RAGSYNC_SIGNAL_METRICS_ADDR]", `(default "127.0.0.1:9464")`, "-metrics-token-file string  [RAGSYNC_SIGNAL_METRICS_TOKEN_FILE]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	const tok = "0123456789abcdef0123456789abcdef"
	st := start(t, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-log-format", "json"}, env{"RAGSYNC_SIGNAL_METRICS_TOKEN_FILE": writeFile(t, "mtok", tok+"\n")})
	url := "http://" + st.addr + "/metrics"
	for _, auth := range []string{"", "Bearer nope", "Bearer " + tok[1:]} {
		if code := status(t, url, auth); code != 401 {
			t.Errorf("/metrics with Authorization %q: %d, want 401", auth, code)
		}
	}
	if code := status(t, url, "Bearer "+tok); code != 200 {
		t.Errorf("/metrics with the token: %d", code)
	}
	if err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-metrics-token-file", writeFile(t, "short", "short")}, env{}.get, &out, nil, nil); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a short metrics token: %v", err)
	}
}

// TestEnv: every flag can come from its environment variable; the
// command line wins.
func TestEnv(t *testing.T) {
	leaktest.Check(t)
	e := env{
		"RAGSYNC_SIGNAL_ADDR":               "127.0.0.1:0",
		"RAGSYNC_SIGNAL_LOG_FORMAT":         "json",
		"RAGSYNC_SIGNAL_MAX_ROOMS":          "1",
		"RAGSYNC_SIGNAL_IDLE_TIMEOUT":       "30s",
		"RAGSYNC_SIGNAL_MAX_CONNS_PER_ADDR": "", // empty: unset
		"RAGSYNC_SIGNAL_SECRET":             "an env secret of 32 characters!!",
		"RAGSYNC_SIGNAL_TRUSTED_PROXIES":    "10.0.0.0/8,192.0.2.1",
		"RAGSYNC_SIGNAL_METRICS_ADDR":       "127.0.0.1:0",
		"RAGSYNC_SIGNAL_IPV4_PREFIXES":      "24:5,16:20",
		"RAGSYNC_SIGNAL_IPV6_PREFIXES":      "none",
	}
	st := start(t, []string{"-idle-timeout", "20s"}, e)
	url := "http://" + st.addr
	tctx := testwait.Context(t)
	a, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if l := a.Limits(); l.IdleTimeoutMS != 20000 {
		t.Fatalf("the flag should win over the environment: %+v", l)
	}
	if _, err := a.CreateRoom(tctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.JoinOrCreateRoom(tctx, "ABCDEF"); !errors.Is(err, signaling.ErrWrongState) {
		t.Fatal(err)
	}
	b, _ := signaling.Dial(tctx, url, signaling.ClientConfig{})
	defer b.Close()
	if _, err := b.CreateRoom(tctx); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("RAGSYNC_SIGNAL_MAX_ROOMS not applied: %v", err)
	}
	if strings.Contains(st.logs.String(), "no -secret") {
		t.Fatal("RAGSYNC_SIGNAL_SECRET not applied")
	}
	if got := st.logValue(t, "signaling server ready", "trusted_proxies"); got != "10.0.0.0/8,192.0.2.1/32" {
		t.Fatalf("trusted proxies %v", got)
	}
	if v4, v6 := st.logValue(t, "signaling server ready", "ipv4_prefixes"), st.logValue(t, "signaling server ready", "ipv6_prefixes"); v4 != "24:5,16:20" || v6 != "none" {
		t.Fatalf("network aggregates %v %v", v4, v6)
	}
	// Metrics are on the metrics address only.
	maddr := st.logValue(t, "metrics listening", "addr").(string)
	if m := get(t, nil, "http://"+maddr+"/metrics"); !bytes.Contains(m, []byte("ragsync_signal_rooms 1")) {
		t.Fatalf("metrics:\n%s", m)
	}
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	if resp.StatusCode != 404 {
		t.Fatalf("/metrics on the public address: %s", resp.Status)
	}
}

// TestHelp lists every flag with its environment variable.
func TestHelp(t *testing.T) {
	var out syncBuf
	if err := run(context.Background(), []string{"-help"}, env{}.get, &out, nil, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, want := range []string{"-addr string  [RAGSYNC_SIGNAL_ADDR]", "-max-conns-per-addr int  [RAGSYNC_SIGNAL_MAX_CONNS_PER_ADDR]",
		"-turn  [RAGSYNC_SIGNAL_TURN]", "-tls-cert string  [RAGSYNC_SIGNAL_TLS_CERT]", "(default \"127.0.0.1:8080\")"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "[RAGSYNC_SIGNAL_"); n < 45 {
		t.Errorf("only %d flags with an environment variable", n)
	}
}

// TestTLS serves wss/https with -tls-cert and -tls-key; signaling and the
// relay work over it.
func TestTLS(t *testing.T) {
	leaktest.Check(t)
	certFile, keyFile, pool := selfSigned(t)
	st := start(t, []string{"-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile, "-secret-file", writeFile(t, "secret", " 0123456789abcdef0123 \n")}, nil)
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	defer tr.CloseIdleConnections()
	url := "https://" + st.addr
	if b := get(t, &http.Transport{TLSClientConfig: tlsCfg}, url+"/healthz"); !bytes.Contains(b, []byte(`"status":"ok"`)) {
		t.Fatalf("healthz %s", b)
	}
	tctx := testwait.Context(t)
	cc := signaling.ClientConfig{HTTPClient: &http.Client{Transport: tr}}
	a, err := signaling.Dial(tctx, "wss://"+st.addr, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := signaling.Dial(tctx, "wss://"+st.addr, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	code, err := a.CreateRoom(tctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JoinRoom(tctx, string(code)); err != nil {
		t.Fatal(err)
	}
	var toks [2]signaling.RelayToken
	for i, c := range []*signaling.Client{a, b} {
		ev, err := c.Recv(tctx)
		if err != nil || ev.Kind != signaling.EventPaired {
			t.Fatal(ev.Kind, err)
		}
		toks[i] = ev.Pairing.Token
	}
	cc = signaling.ClientConfig{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}}
	rc := make(chan net.Conn, 1)
	go func() { c, _ := signaling.DialRelay(tctx, url, toks[0], cc); rc <- c }()
	cb, err := signaling.DialRelay(tctx, url, toks[1], cc)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	ca := <-rc
	if ca == nil {
		t.Fatal("relay over TLS failed")
	}
	defer ca.Close()
	ca.Write([]byte("tls"))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(cb, buf); err != nil || string(buf) != "tls" {
		t.Fatalf("%q %v", buf, err)
	}
}

// TestTURNFlags: -turn with loopback listeners hands out ICE servers.
func TestTURNFlags(t *testing.T) {
	leaktest.Check(t)
	st := start(t, []string{"-addr", "127.0.0.1:0", "-turn", "-turn-ip", "127.0.0.1", "-turn-bind", "127.0.0.1",
		"-turn-udp", "127.0.0.1:0", "-turn-tcp", "127.0.0.1:0", "-turn-ports", "40000-40100", "-turn-realm", "test", "-turn-credential-ttl", "2m", "-turn-lan"}, nil)
	tctx := testwait.Context(t)
	url := "http://" + st.addr
	a, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.QuickMatch(tctx); err != nil {
		t.Fatal(err)
	}
	if err := b.QuickMatch(tctx); err != nil {
		t.Fatal(err)
	}
	ev, err := a.Recv(tctx)
	if err != nil || ev.Kind != signaling.EventPaired {
		t.Fatal(ev.Kind, err)
	}
	ice := ev.Pairing.ICEServers
	if len(ice) != 2 || len(ice[0].URLs) != 2 || !strings.HasPrefix(ice[0].URLs[0], "turn:127.0.0.1:") || ice[0].Credential == "" {
		t.Fatalf("ICE servers %+v", ice)
	}
	exp, _, _ := strings.Cut(ice[0].Username, ":")
	if sec, err := strconv.ParseInt(exp, 10, 64); err != nil || time.Until(time.Unix(sec, 0)) > 2*time.Minute+time.Second {
		t.Fatalf("-turn-credential-ttl 2m not applied: %q", ice[0].Username)
	}
}

func TestRunBadFlags(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	for _, tc := range []struct {
		args []string
		env  env
	}{
		{args: []string{"-log-format", "xml"}},
		{args: []string{"-log-level", "loud"}},
		{args: []string{"-max-rooms", "-1"}},
		{args: []string{"extra"}},
		{args: []string{"-addr", "127.0.0.1:99999"}},
		{args: []string{"-secret", "short"}},
		{args: []string{"-secret", "0123456789abcdef", "-secret-file", "x"}},
		{args: []string{"-secret-file", "/nonexistent"}},
		{args: []string{"-tls-cert", certFile}},
		{args: []string{"-tls-cert", keyFile, "-tls-key", keyFile}},
		{args: []string{"-trusted-proxies", "not-an-ip"}},
		{args: []string{"-turn"}},
		{args: []string{"-turn", "-turn-ip", "127.0.0.1", "-turn-ports", "9-3"}},
		{args: []string{"-turn", "-turn-ip", "0.0.0.0"}},
		{args: []string{"-turn", "-turn-ip", "127.0.0.1", "-turn-udp", "127.0.0.1:99999"}},
		{env: env{"RAGSYNC_SIGNAL_MAX_CONNS": "many"}},
	} {
		var out syncBuf
		err := run(context.Background(), tc.args, tc.env.get, &out, nil, nil)
		if err == nil {
			t.Errorf("run(%q, %v) succeeded", tc.args, tc.env)
		}
		if tc.env != nil && !strings.Contains(err.Error(), "RAGSYNC_SIGNAL_MAX_CONNS") {
			t.Errorf("error does not name the variable: %v", err)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// selfSigned writes a self-signed certificate for localhost and 127.0.0.1.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestEnvBadValue: a bad environment value is refused naming the variable,
// the value and what was expected.
func TestEnvBadValue(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"RAGSYNC_SIGNAL_MAX_CONNS", "many", `RAGSYNC_SIGNAL_MAX_CONNS="many": want an integer`},
		{"RAGSYNC_SIGNAL_IDLE_TIMEOUT", "30", `RAGSYNC_SIGNAL_IDLE_TIMEOUT="30": want a duration like 30s`},
		{"RAGSYNC_SIGNAL_RATE", "fast", `RAGSYNC_SIGNAL_RATE="fast": want a number`},
		{"RAGSYNC_SIGNAL_TURN", "yes", `RAGSYNC_SIGNAL_TURN="yes": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuf
			err := run(context.Background(), nil, env{tc.name: tc.value}.get, &out, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
