package bucket

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The web identity token goes to the STS endpoint and nowhere else
// (finding 9): a redirect from it is not followed, and AWS_ENDPOINT_URL
// (an S3-compatible service's, MinIO's) is never taken for STS.
func TestWebIdentityTokenStaysWithSTS(t *testing.T) {
	var stolen atomic.Value
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		stolen.Store(string(body) + r.URL.RawQuery)
	}))
	defer target.Close()
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/", http.StatusTemporaryRedirect)
	}))
	defer sts.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("the-web-identity-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn, err := FromEnv(env(map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_STS": sts.URL,
		"AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AWS_WEB_IDENTITY_TOKEN_FILE": token}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Location{Bucket: "images"}, conn, Options{Retries: -1, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Stat(ctx, "a.jpg"); err == nil {
		t.Fatal("a Stat signed with credentials STS never gave")
	}
	if s, _ := stolen.Load().(string); strings.Contains(s, "the-web-identity-token") {
		t.Errorf("the token followed STS's redirect: %q", s)
	}

	conn, err = FromEnv(env(map[string]string{"AWS_ENDPOINT_URL": "http://minio.internal:9000",
		"AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AWS_WEB_IDENTITY_TOKEN_FILE": token}))
	if err != nil || conn.STSEndpoint != "" {
		t.Errorf("AWS_ENDPOINT_URL alone: STS endpoint %q (%v), want AWS's own", conn.STSEndpoint, err)
	}
}

// A refused endpoint is named without its credentials (Info): the start-up
// error is logged, and a key in the URL's user information must not be.
func TestRefusedEndpointRedacted(t *testing.T) {
	for _, ep := range []string{"https://AKIAX:hunter2@s3.example/path", "ftp://AKIAX:hunter2@s3.example", "https://AKIAX:hunter2@s3.example"} {
		_, err := FromEnv(env(map[string]string{"AWS_ENDPOINT_URL_S3": ep}))
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", ep, err)
		}
	}
}
