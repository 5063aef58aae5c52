package bucket

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/net/http/httpproxy"
)

// Conn is how to reach and sign for the storage service: the AWS SDKs'
// standard settings, so that what operators set for every other S3 tool
// works here too.
type Conn struct {
	// Endpoint is AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL: any
	// S3-compatible service's URL ("": AWS S3).
	Endpoint string
	Region   string // AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1
	// Addressing is THUMBD_S3_ADDRESSING: AddressingAuto (path-style for a
	// custom endpoint, virtual-hosted for AWS), AddressingPath or
	// AddressingVirtual.
	Addressing string
	// Static keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
	// AWS_SESSION_TOKEN.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Web identity (EKS IRSA): AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE,
	// and AWS_ENDPOINT_URL_STS for a custom STS.
	RoleARN, WebIdentityTokenFile, STSEndpoint string
	// Proxies: HTTPS_PROXY, HTTP_PROXY, NO_PROXY (either case).
	Proxy httpproxy.Config
}

// Addressing styles (THUMBD_S3_ADDRESSING).
const (
	AddressingAuto    = "auto"
	AddressingPath    = "path"
	AddressingVirtual = "virtual"
)

// DefaultRegion is the region signed for when none is set, as the AWS CLI
// does for S3.
const DefaultRegion = "us-east-1"

// EnvVars are the AWS variables FromEnv reads (beside the proxies'), with
// their meanings: `thumbd settings -json` lists them, so that k8s/validate
// knows a manifest that sets them sets something thumbd reads.
var EnvVars = []struct{ Name, Meaning string }{
	{"AWS_ENDPOINT_URL_S3", "object storage: the S3-compatible service's URL (empty: AWS S3)"},
	{"AWS_ENDPOINT_URL", "object storage: the endpoint when AWS_ENDPOINT_URL_S3 is unset (never STS's)"},
	{"AWS_REGION", "object storage: the region signed for (default us-east-1)"},
	{"AWS_DEFAULT_REGION", "object storage: the region when AWS_REGION is unset"},
	{"AWS_ACCESS_KEY_ID", "object storage: a static key's ID, with AWS_SECRET_ACCESS_KEY"},
	{"AWS_SECRET_ACCESS_KEY", "object storage: a static key's secret (from a Secret, never a ConfigMap)"},
	{"AWS_SESSION_TOKEN", "object storage: a temporary key's session token (from a Secret)"},
	{"AWS_ROLE_ARN", "object storage: the role of a web identity (EKS IRSA), with AWS_WEB_IDENTITY_TOKEN_FILE"},
	{"AWS_WEB_IDENTITY_TOKEN_FILE", "object storage: the web identity token's file (EKS IRSA)"},
	{"AWS_ENDPOINT_URL_STS", "object storage: a custom STS endpoint for the web identity (the only variable that sets it)"},
}

// FromEnv reads the AWS SDKs' standard variables through getenv (run's,
// not the process's: tests give their own). Without keys or a web
// identity, requests are signed with the instance's role (EC2 instance
// metadata, or ECS and EKS pod identity's container credentials).
func FromEnv(getenv func(string) string) (Conn, error) {
	either := func(a, b string) string {
		if v := getenv(a); v != "" {
			return v
		}
		return getenv(b)
	}
	c := Conn{
		Endpoint:             either("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:               cmpOr(either("AWS_REGION", "AWS_DEFAULT_REGION"), DefaultRegion),
		Addressing:           AddressingAuto,
		AccessKeyID:          getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey:      getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:         getenv("AWS_SESSION_TOKEN"),
		RoleARN:              getenv("AWS_ROLE_ARN"),
		WebIdentityTokenFile: getenv("AWS_WEB_IDENTITY_TOKEN_FILE"),
		// STS only from its own variable: AWS_ENDPOINT_URL is set for an
		// S3-compatible service (MinIO), which must never get the token.
		STSEndpoint: getenv("AWS_ENDPOINT_URL_STS"),
		Proxy: httpproxy.Config{
			HTTPProxy:  either("HTTP_PROXY", "http_proxy"),
			HTTPSProxy: either("HTTPS_PROXY", "https_proxy"),
			NoProxy:    either("NO_PROXY", "no_proxy"),
		},
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return Conn{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set together or not at all")
	}
	if (c.RoleARN == "") != (c.WebIdentityTokenFile == "") && c.AccessKeyID == "" {
		return Conn{}, errors.New("AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are set together or not at all")
	}
	if _, _, _, err := c.endpoint(); err != nil {
		return Conn{}, err
	}
	return c, nil
}

// endpoint is the host minio-go dials, whether over TLS, and the
// addressing style.
func (c Conn) endpoint() (host string, secure bool, lookup minio.BucketLookupType, err error) {
	switch c.Addressing {
	case AddressingPath:
		lookup = minio.BucketLookupPath
	case AddressingVirtual:
		lookup = minio.BucketLookupDNS
	case AddressingAuto, "":
		lookup = minio.BucketLookupAuto
		if c.Endpoint != "" {
			// Most S3-compatible services (MinIO, Ceph, SeaweedFS,
			// versitygw, anything on an IP address) serve path-style;
			// virtual-hosted needs wildcard DNS the operator may not have.
			lookup = minio.BucketLookupPath
		}
	default:
		return "", false, 0, errors.New("THUMBD_S3_ADDRESSING is auto, path or virtual, not " + quote(c.Addressing))
	}
	if c.Endpoint == "" {
		return "s3.amazonaws.com", true, lookup, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return "", false, 0, errors.New("the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) must be http:// or https:// and a host, without a path or user information: " + quote(redact(c.Endpoint, u, err)))
	}
	return u.Host, u.Scheme == "https", lookup, nil
}

// redact is an endpoint as an error may show it: never its user
// information (a key pasted into the URL), nor the whole of what does not
// parse.
func redact(raw string, u *url.URL, err error) string {
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "(redacted)@" + raw[i+1:]
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return u.String()
}

// Plaintext reports whether the endpoint is http:// on a host that is not
// loopback: keys' signatures, objects and credentials' answers cross the
// network unencrypted (the start-up warns).
func (c Conn) Plaintext() bool {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// proxy is the transport's proxy function from the proxy settings.
func (c Conn) proxy() func(*http.Request) (*url.URL, error) {
	if c.Proxy == (httpproxy.Config{}) {
		return nil
	}
	f := c.Proxy.ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return f(r.URL) }
}

// credentials are, in the AWS SDKs' order: static keys, a web identity,
// the instance's role. client carries the STS and metadata calls.
func (c Conn) credentials(client *http.Client) *credentials.Credentials {
	switch {
	case c.AccessKeyID != "":
		return credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	case c.RoleARN != "":
		sts := c.STSEndpoint
		if sts == "" {
			sts = "https://sts." + c.Region + ".amazonaws.com"
		}
		file := c.WebIdentityTokenFile
		return credentials.New(&credentials.STSWebIdentity{
			Client: client, STSEndpoint: sts, RoleARN: c.RoleARN,
			// The token is read at every refresh: kubelet rotates the file.
			GetWebIDTokenExpiry: func() (*credentials.WebIdentityToken, error) {
				token, err := os.ReadFile(file)
				if err != nil {
					return nil, err
				}
				return &credentials.WebIdentityToken{Token: strings.TrimSpace(string(token))}, nil
			},
		})
	}
	return credentials.New(&credentials.IAM{Client: client, Region: c.Region})
}

// Reach is how loc is reached: conn when given, else the AWS variables
// read through getenv, with addressing (THUMBD_S3_ADDRESSING). A client of
// loc is made once, so that a setting it refuses stops the start.
func Reach(loc Location, conn *Conn, getenv func(string) string, addressing string) (Conn, error) {
	var c Conn
	if conn != nil {
		c = *conn
	} else {
		var err error
		if c, err = FromEnv(getenv); err != nil {
			return Conn{}, err
		}
		c.Addressing = addressing
	}
	if _, err := New(loc, c, Options{}); err != nil {
		return Conn{}, err
	}
	return c, nil
}
