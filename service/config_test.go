package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// envOf is an environment of kv's variables, in os.LookupEnv's shape: a
// variable present with "" is set empty.
func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestConfigDefaults(t *testing.T) {
	c := testConfig(t)
	if c.Port != 8080 || c.MaxBodyBytes != 20<<20 || c.MaxPixels != 40_000_000 || c.MaxFrames != 256 || c.MaxSide != 4096 ||
		c.Concurrency != runtime.GOMAXPROCS(0) || c.Queue != min(1024, 128*c.Concurrency) || c.SourceBudget != int64(max(5, 2*c.Concurrency+1))*20<<20 || c.Deadline != 10*time.Second || c.SourceDir != "" ||
		c.ShutdownDelay != 0 || c.ShutdownTimeout != 30*time.Second || c.LogLevel.String() != "INFO" || c.JPEGShrink != thumbjob.JPEGShrinkFast {
		t.Fatalf("defaults: %+v", c)
	}
}

// The source budget follows the body limit unless it is set; below the
// body limit it is refused, since the largest source could never be read.
func TestConfigSourceBudget(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int64
	}{
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_MAX_BODY_BYTES": "1000"}, 5000},
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_MAX_BODY_BYTES": "1000", "THUMBD_SOURCE_BUDGET": "7000"}, 7000},
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_SOURCE_BUDGET": "0"}, 5 * 20 << 20},
		{map[string]string{"THUMBD_CONCURRENCY": "8", "THUMBD_MAX_BODY_BYTES": "1000"}, 17000},
	} {
		c, err := loadConfig(nil, envOf(tc.env), io.Discard)
		if err != nil || c.SourceBudget != tc.want {
			t.Errorf("%v: budget %d, %v; want %d", tc.env, c.SourceBudget, err, tc.want)
		}
	}
	_, err := loadConfig([]string{"-source-budget", "999"}, envOf(map[string]string{"THUMBD_MAX_BODY_BYTES": "1000"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "source budget 999: want at least the body limit 1000") {
		t.Fatalf("budget under the body limit: %v", err)
	}
}

func TestConfigEnvAndFlags(t *testing.T) {
	env := envOf(map[string]string{"PORT": "9000", "THUMBD_QUEUE": "5", "THUMBD_DEADLINE": "2s", "THUMBD_LOG_LEVEL": "debug", "THUMBD_CONCURRENCY": "3", "THUMBD_JPEG_SHRINK": "quality", "THUMBD_AVIF_EFFORT": "7"})
	c, err := loadConfig([]string{"-queue", "7", "-shutdown-delay", "5s"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 9000 || c.Queue != 7 || c.Deadline != 2*time.Second || c.ShutdownDelay != 5*time.Second || c.Concurrency != 3 || c.LogLevel.String() != "DEBUG" || c.JPEGShrink != thumbjob.JPEGShrinkQuality || c.AVIFEffort != 7 {
		t.Fatalf("got %+v", c)
	}
}

func TestConfigErrorsAreAllReported(t *testing.T) {
	env := envOf(map[string]string{"PORT": "eighty", "THUMBD_DEADLINE": "soon", "THUMBD_LOG_LEVEL": "loud", "THUMBD_CONCURRENCY": "0", "THUMBD_WRITE_TIMEOUT": "1s", "THUMBD_JPEG_SHRINK": "fastest", "THUMBD_AVIF_EFFORT": "10",
		"THUMBD_INPUTS": "jpeg,svg", "THUMBD_PAST_CONNECTION_CAP": "drop"})
	_, err := loadConfig(nil, env, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"PORT", "THUMBD_DEADLINE", "log level", "concurrency", "write timeout", "JPEG shrink", "AVIF effort 10",
		"THUMBD_INPUTS", `"svg" is not an input format`, "THUMBD_PAST_CONNECTION_CAP", "want one of backlog, refuse"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := loadConfig([]string{"-no-such-flag"}, envOf(nil), io.Discard); err == nil {
		t.Error("unknown flag accepted")
	}
	if _, err := loadConfig([]string{"extra"}, envOf(nil), io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}

func TestSettingsJSON(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"thumbd", "settings", "-json"}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rows []struct{ Env, Flag, Default, Meaning string }
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	// The OpenTelemetry variables come last, without a flag: the SDK reads
	// them (docs/observability.md lists them: TestDocsSettingsTables).
	otel := rows[len(rows)-len(tracing.Env):]
	rows = rows[:len(rows)-len(tracing.Env)]
	for i, r := range otel {
		if r.Env != tracing.Env[i].Name || r.Flag != "" || r.Default != "" || r.Meaning == "" {
			t.Errorf("tracing row %+v", r)
		}
	}
	// Before them, the AWS variables object storage reads
	// (bucket.FromEnv), without a flag either.
	aws := rows[len(rows)-len(bucket.EnvVars):]
	rows = rows[:len(rows)-len(bucket.EnvVars)]
	for i, r := range aws {
		if r.Env != bucket.EnvVars[i].Name || r.Flag != "" || r.Meaning == "" {
			t.Errorf("AWS row %+v", r)
		}
	}
	env := map[string]string{}
	for _, r := range rows {
		if r.Env == "" || !strings.HasPrefix(r.Flag, "-") || r.Meaning == "" {
			t.Errorf("incomplete row %+v", r)
		}
		env[r.Env] = r.Default
	}
	if len(rows) != len(settings(&config{}, 1)) || env["PORT"] != "8080" || env["THUMBD_DEADLINE"] != "10s" || env["THUMBD_CONCURRENCY"] != "" {
		t.Fatalf("rows %+v", rows)
	}
	// Each row's variable reaches the config: setting one to a bad value
	// is reported under its name.
	for _, r := range rows {
		if r.Env == "THUMBD_SOURCE_DIR" || r.Env == "THUMBD_SOURCE" {
			continue // any string is a valid directory name until it is opened
		}
		_, err := loadConfig(nil, envOf(map[string]string{r.Env: "\x01bad"}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), r.Env) {
			t.Errorf("%s=bad: %v", r.Env, err)
		}
	}
	if err := run(context.Background(), []string{"thumbd", "settings", "-xml"}, envOf(nil), &out, io.Discard); err == nil {
		t.Error("unknown settings flag accepted")
	}
}

// Signing keys are secrets: a bad one is reported without its value, and
// -help does not print the environment's keys as a default.
func TestSigningKeysAreNotPrinted(t *testing.T) {
	const short = "00112233445566778899aabbccddee"
	_, err := loadConfig(nil, envOf(map[string]string{"THUMBD_SIGNING_KEYS": short}), io.Discard)
	if err == nil || strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "THUMBD_SIGNING_KEYS") {
		t.Errorf("%v", err)
	}
	const good = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	var help bytes.Buffer
	loadConfig([]string{"-help"}, envOf(map[string]string{"THUMBD_SIGNING_KEYS": good}), &help)
	if !strings.Contains(help.String(), "-signing-keys") || strings.Contains(help.String(), good) {
		t.Errorf("-help:\n%s", help.String())
	}
}

// THUMBD_SIGNING_KEYS set but holding no key (blank, commas and spaces,
// an empty Kubernetes Secret made by a key command that failed) stops
// start-up with an error naming it, instead of turning signing off.
func TestBlankSigningKeysStopStartUp(t *testing.T) {
	for _, blank := range []string{"", " ", " , ", ",,", "\t"} {
		_, err := loadConfig(nil, envOf(map[string]string{"THUMBD_SIGNING_KEYS": blank}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "THUMBD_SIGNING_KEYS") || !strings.Contains(err.Error(), "no key") {
			t.Errorf("THUMBD_SIGNING_KEYS=%q: %v", blank, err)
		}
	}
	if _, err := loadConfig([]string{"-signing-keys", " , "}, envOf(nil), io.Discard); err == nil {
		t.Error("-signing-keys ' , ' accepted")
	}
	if c, err := loadConfig(nil, envOf(nil), io.Discard); err != nil || len(c.SigningKeys) != 0 {
		t.Errorf("unset: %v %v", c.SigningKeys, err)
	}
}

// An origin entry the guard would always refuse stops start-up.
func TestOriginsTheGuardRefusesAreConfigErrors(t *testing.T) {
	for origins, want := range map[string]string{
		"10.0.0.5":                      "private",
		"http://169.254.169.254":        "link-local",
		"http://127.0.0.1:9000":         "loopback",
		"images.example.com, [fc00::1]": "unique local",
		"8.8.8.8, images.example.com":   "",
	} {
		_, err := loadConfig(nil, envOf(map[string]string{"THUMBD_ORIGINS": origins}), io.Discard)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", origins, err, want)
		}
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_ORIGINS": "http://127.0.0.1:9000", "THUMBD_ORIGINS_ALLOW_LOOPBACK": "true"}), io.Discard); err != nil {
		t.Errorf("loopback with the switch: %v", err)
	}
}

// The public-delivery settings: off by default (no origin, no key, no
// preset, uploads on, loopback refused, 5 s fetches), read from the
// environment, each flag winning over its variable, and a fetch timeout
// that is not positive refused.
func TestPublicDeliverySettings(t *testing.T) {
	c := testConfig(t)
	if c.Origins != nil || c.AllowLoopback || c.FetchTimeout != 5*time.Second || c.SigningKeys != nil || c.Presets != nil || c.PresetsOnly || !c.Uploads {
		t.Fatalf("defaults: %+v", c)
	}
	const key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	env := envOf(map[string]string{
		"THUMBD_ORIGINS": "images.example.com", "THUMBD_FETCH_TIMEOUT": "2s", "THUMBD_SIGNING_KEYS": key,
		"THUMBD_PRESETS": "small:w=10", "THUMBD_PRESETS_ONLY": "true", "THUMBD_UPLOADS": "false",
	})
	c, err := loadConfig([]string{"-origins", "http://127.0.0.1:9000", "-origins-allow-loopback", "-fetch-timeout", "750ms", "-uploads=true"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Origins) != 1 || c.Origins[0].String() != "http://127.0.0.1:9000" || !c.AllowLoopback || c.FetchTimeout != 750*time.Millisecond ||
		len(c.SigningKeys) != 1 || c.Presets["small"]["w"] != "10" || !c.PresetsOnly || !c.Uploads {
		t.Fatalf("got %+v", c)
	}
	for _, v := range []string{"0s", "-1s"} {
		if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_FETCH_TIMEOUT": v}), io.Discard); err == nil || !strings.Contains(err.Error(), "fetch timeout") {
			t.Errorf("THUMBD_FETCH_TIMEOUT=%s: %v", v, err)
		}
	}
}

// THUMBD_SOURCE is a directory or a bucket; THUMBD_SOURCE_DIR keeps
// working; both set, or a bucket that cannot be reached as configured, is
// a start-up error naming the setting.
func TestSourceSetting(t *testing.T) {
	c, err := loadConfig(nil, envOf(map[string]string{"THUMBD_SOURCE": "/srv/images"}), io.Discard)
	if err != nil || c.SourceDir != "/srv/images" || c.SourceBucket != nil {
		t.Fatalf("a directory: %v %q", err, c.SourceDir)
	}
	c, err = loadConfig(nil, envOf(map[string]string{"THUMBD_SOURCE_DIR": "/srv/images"}), io.Discard)
	if err != nil || c.SourceDir != "/srv/images" {
		t.Fatalf("THUMBD_SOURCE_DIR: %v", err)
	}
	c, err = loadConfig([]string{"-s3-addressing", "virtual"}, envOf(map[string]string{"THUMBD_SOURCE": "s3://images/orig",
		"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-3"}), io.Discard)
	if err != nil || c.SourceDir != "" || c.SourceBucket == nil || c.SourceBucket.Prefix != "orig/" ||
		c.S3.Endpoint != "http://127.0.0.1:9000" || c.S3.Region != "eu-west-3" || c.S3.Addressing != "virtual" {
		t.Fatalf("a bucket: %v %+v %+v", err, c.SourceBucket, c.S3)
	}
	for want, env := range map[string]map[string]string{
		"are both set":                 {"THUMBD_SOURCE": "/a", "THUMBD_SOURCE_DIR": "/b"},
		"is not one S3 allows":         {"THUMBD_SOURCE": "s3://Images"},
		"AWS_SECRET_ACCESS_KEY":        {"THUMBD_SOURCE": "s3://images", "AWS_ACCESS_KEY_ID": "k"},
		"without a path":               {"THUMBD_SOURCE": "s3://images", "AWS_ENDPOINT_URL_S3": "http://h:1/images"},
		"source max age -1s":           {"THUMBD_SOURCE": "s3://images", "THUMBD_SOURCE_MAX_AGE": "-1s"},
		"source max conns 0":           {"THUMBD_SOURCE": "s3://images", "THUMBD_SOURCE_MAX_CONNS": "0"},
		"THUMBD_S3_ADDRESSING=\"dns\"": {"THUMBD_SOURCE": "s3://images", "THUMBD_S3_ADDRESSING": "dns"},
	} {
		if _, err := loadConfig(nil, envOf(env), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want an error saying %q", env, err, want)
		}
	}
}

// THUMBD_CACHE_UPLOADS=true lets one client learn whether another
// uploaded the same image (a hit's time against a miss's): the setting's
// row says so, and so does docs/hardening.md, where the trust findings are.
func TestCacheUploadsSaysWhatItDiscloses(t *testing.T) {
	for _, r := range settings(&config{}, 1) {
		if r.Env == "THUMBD_CACHE_UPLOADS" && !strings.Contains(r.Meaning, "learn whether another uploaded the same image") {
			t.Errorf("THUMBD_CACHE_UPLOADS's row does not say what it discloses: %s", r.Meaning)
		}
	}
	doc, err := os.ReadFile("../docs/hardening.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "`THUMBD_CACHE_UPLOADS=true` lets one client learn whether another uploaded the same image") {
		t.Error("docs/hardening.md does not say what THUMBD_CACHE_UPLOADS=true discloses")
	}
}

// THUMBD_ADMIN_PORT is off unless set; 0 is a free port; anything but a
// port, or PORT itself, is refused at start.
func TestConfigAdminPort(t *testing.T) {
	if c := testConfig(t); c.AdminPort.On {
		t.Fatalf("admin port on by default: %+v", c.AdminPort)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want adminPort
	}{
		{map[string]string{"THUMBD_ADMIN_PORT": "9090"}, nil, adminPort{On: true, Port: 9090}},
		{map[string]string{"THUMBD_ADMIN_PORT": "0", "PORT": "0"}, nil, adminPort{On: true, Port: 0}},
		{nil, []string{"-admin-port", "9091"}, adminPort{On: true, Port: 9091}},
		{map[string]string{"THUMBD_ADMIN_PORT": ""}, nil, adminPort{}},
	} {
		c, err := loadConfig(tc.args, envOf(tc.env), io.Discard)
		if err != nil || c.AdminPort != tc.want {
			t.Errorf("%v %v: %+v, %v; want %+v", tc.env, tc.args, c.AdminPort, err, tc.want)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"THUMBD_ADMIN_PORT": "http"}, `THUMBD_ADMIN_PORT="http": want a port 0..65535`},
		{map[string]string{"THUMBD_ADMIN_PORT": "-1"}, `THUMBD_ADMIN_PORT="-1": want a port 0..65535`},
		{map[string]string{"THUMBD_ADMIN_PORT": "65536"}, `THUMBD_ADMIN_PORT="65536": want a port 0..65535`},
		{map[string]string{"THUMBD_ADMIN_PORT": "8080"}, "admin port 8080: the same as PORT"},
	} {
		if _, err := loadConfig(nil, envOf(tc.env), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
}

// THUMBD_MAX_CONNECTIONS follows the slots and the queue unless set (0:
// derived); a negative cap, or one past a million, is refused.
func TestConfigMaxConnections(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_MEMORY_LIMIT": "268435456"}, 258},   // 2 + 256
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_MEMORY_LIMIT": "1073741824"}, 258},  // 2 + 256 (128 a slot)
		{map[string]string{"THUMBD_CONCURRENCY": "8", "THUMBD_MEMORY_LIMIT": "1073741824"}, 1032}, // 8 + 1024
		{map[string]string{"THUMBD_CONCURRENCY": "2", "THUMBD_MEMORY_LIMIT": "134217728"}, 130},   // 2 + 128 (a MiB each)
		{map[string]string{"THUMBD_CONCURRENCY": "4", "THUMBD_QUEUE": "8"}, 12},                   // 4 + 8
		{map[string]string{"THUMBD_MAX_CONNECTIONS": "0", "THUMBD_CONCURRENCY": "2", "THUMBD_QUEUE": "100"}, 102},
		{map[string]string{"THUMBD_MAX_CONNECTIONS": "5"}, 5},
	} {
		c, err := loadConfig(nil, envOf(tc.env), io.Discard)
		if err != nil || c.MaxConnections != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.env, c.MaxConnections, err, tc.want)
		}
	}
	for _, v := range []string{"-1", "1000001", "many"} {
		_, err := loadConfig(nil, envOf(map[string]string{"THUMBD_MAX_CONNECTIONS": v}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "max connections") && !strings.Contains(err.Error(), "THUMBD_MAX_CONNECTIONS") {
			t.Errorf("THUMBD_MAX_CONNECTIONS=%s: %v", v, err)
		}
	}
}

// The cap's other rules: no cap per address, a 5 s stall and 8 KiB/s by
// default; each can be set, 0 turns it off, a negative value (or a rate
// past 1 GiB/s) is refused.
func TestConfigSlowClientsAndAddresses(t *testing.T) {
	c, err := loadConfig(nil, envOf(nil), io.Discard)
	if err != nil || c.MaxConnectionsPerAddress != 0 || c.ClientStallTimeout != 5*time.Second || c.ClientMinRate != 8192 {
		t.Fatalf("defaults: %d, %s, %d, %v", c.MaxConnectionsPerAddress, c.ClientStallTimeout, c.ClientMinRate, err)
	}
	c, err = loadConfig([]string{"-client-min-rate", "0"}, envOf(map[string]string{
		"THUMBD_MAX_CONNECTIONS_PER_ADDRESS": "16", "THUMBD_CLIENT_STALL_TIMEOUT": "0s", "THUMBD_CLIENT_MIN_RATE": "100"}), io.Discard)
	if err != nil || c.MaxConnectionsPerAddress != 16 || c.ClientStallTimeout != 0 || c.ClientMinRate != 0 {
		t.Fatalf("set: %d, %s, %d, %v", c.MaxConnectionsPerAddress, c.ClientStallTimeout, c.ClientMinRate, err)
	}
	for env, want := range map[string]string{
		"THUMBD_MAX_CONNECTIONS_PER_ADDRESS": "max connections per address -1",
		"THUMBD_CLIENT_STALL_TIMEOUT":        "client stall timeout -1s",
		"THUMBD_CLIENT_MIN_RATE":             "client min rate -1",
	} {
		v := "-1"
		if env == "THUMBD_CLIENT_STALL_TIMEOUT" {
			v = "-1s"
		}
		if _, err := loadConfig(nil, envOf(map[string]string{env: v}), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want %q", env, v, err, want)
		}
	}
	if _, err := loadConfig(nil, envOf(map[string]string{"THUMBD_CLIENT_MIN_RATE": "1073741825"}), io.Discard); err == nil || !strings.Contains(err.Error(), "client min rate 1073741825") {
		t.Errorf("a rate past 1 GiB/s: %v", err)
	}
}

// `thumbd health` asks the admin port when one is set.
func TestHealthSubcommandAsksTheAdminPort(t *testing.T) {
	ok := httptest.NewServer((&pipeline.Responder{}).Handle(lifecycle.HandleHealth))
	defer ok.Close()
	adminPort := ok.URL[strings.LastIndex(ok.URL, ":")+1:]
	closed := httptest.NewServer(nil)
	servingPort := closed.URL[strings.LastIndex(closed.URL, ":")+1:]
	closed.Close()
	env := envOf(map[string]string{"PORT": servingPort, "THUMBD_ADMIN_PORT": adminPort})
	if err := run(context.Background(), []string{"thumbd", "health"}, env, io.Discard, io.Discard); err != nil {
		t.Fatalf("admin port healthy, PORT closed: %v", err)
	}
	env = envOf(map[string]string{"PORT": adminPort, "THUMBD_ADMIN_PORT": servingPort})
	if err := run(context.Background(), []string{"thumbd", "health"}, env, io.Discard, io.Discard); err == nil {
		t.Fatal("admin port closed: reported healthy")
	}
}
