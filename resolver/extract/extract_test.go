package extract

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpc-config-dns/grpc-config-dns/internal/testpb"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// The two rules of the design's example.
var seedRules = []serviceconfig.HeaderRule{
	{PayloadFieldName: "resource.id", Delimiter: '/', NumElementsToKeep: 2, HeaderName: "resource_affinity_key"},
	{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 3, HeaderName: "user_affinity_key"},
}

var seedRequest = &testpb.EchoRequest{Resource: &testpb.Resource{Id: "//foo/bar/baz"}, User: "roth@quux@mumble@frotz"}

func mustRules(t testing.TB, byName map[string][]serviceconfig.HeaderRule) *Rules {
	t.Helper()
	r, err := New(byName)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func extract(t *testing.T, rules []serviceconfig.HeaderRule, req *testpb.EchoRequest) ([]string, error) {
	t.Helper()
	r := mustRules(t, map[string][]serviceconfig.HeaderRule{"": rules})
	p, err := r.plan("/m", r.lookup("/m"), req.ProtoReflect().Descriptor())
	if err != nil {
		return nil, err
	}
	return p.headers(nil, req.ProtoReflect()), nil
}

func TestSeedExample(t *testing.T) {
	got, err := extract(t, seedRules, seedRequest)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"resource_affinity_key", "foo/bar", "user_affinity_key", "roth@quux@mumble"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("headers %q, want %q", got, want)
	}
}

func TestEdgeCases(t *testing.T) {
	rule := func(path string, keep int) []serviceconfig.HeaderRule {
		return []serviceconfig.HeaderRule{{PayloadFieldName: path, Delimiter: '/', NumElementsToKeep: keep, HeaderName: "k"}}
	}
	for _, tc := range []struct {
		name  string
		rules []serviceconfig.HeaderRule
		req   *testpb.EchoRequest
		want  string // "" for no header
	}{
		{"fewer elements than asked", rule("resource.id", 5), &testpb.EchoRequest{Resource: &testpb.Resource{Id: "/a/b"}}, "a/b"},
		{"only delimiters", rule("resource.id", 1), &testpb.EchoRequest{Resource: &testpb.Resource{Id: "///"}}, ""},
		{"nested message unset", rule("resource.id", 1), &testpb.EchoRequest{}, ""},
		{"deeper message unset", rule("resource.parent.id", 1), &testpb.EchoRequest{Resource: &testpb.Resource{Id: "x"}}, ""},
		{"deeper message set", rule("resource.parent.id", 1), &testpb.EchoRequest{Resource: &testpb.Resource{Parent: &testpb.Resource{Id: "p/q"}}}, "p"},
		{"empty string", rule("user", 1), &testpb.EchoRequest{}, ""},
		{"JSON name", rule("tenantId", 1), &testpb.EchoRequest{TenantId: "t1/x"}, "t1"},
		{"proto name", rule("tenant_id", 1), &testpb.EchoRequest{TenantId: "t1/x"}, "t1"},
	} {
		got, err := extract(t, tc.rules, tc.req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if (tc.want == "" && len(got) != 0) || (tc.want != "" && (len(got) != 2 || got[1] != tc.want)) {
			t.Errorf("%s: headers %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPathsThatDoNotFit(t *testing.T) {
	for path, reason := range map[string]string{
		"resourse.id":   `has no field "resourse"`,
		"tags":          "is repeated",
		"resources.id":  "is repeated",
		"labels":        "is a map",
		"count":         "not a string",
		"user.name":     "not a message",
		"resource":      "not a string",
		"resource.nope": `grpcconfigdns.test.v1.Resource has no field "nope"`,
	} {
		_, err := extract(t, []serviceconfig.HeaderRule{{PayloadFieldName: path, Delimiter: '/', NumElementsToKeep: 1, HeaderName: "k"}}, &testpb.EchoRequest{})
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one saying %q", path, err, reason)
		}
	}
}

func TestNewChecksRules(t *testing.T) {
	good := serviceconfig.HeaderRule{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "u"}
	for name, byName := range map[string]map[string][]serviceconfig.HeaderRule{
		"bad name":       {"pkg.Echo": {good}},
		"reserved":       {"": {{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "grpc-x"}}},
		"upper case":     {"": {{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "User"}}},
		"keep zero":      {"": {{PayloadFieldName: "user", Delimiter: '@', HeaderName: "u"}}},
		"no delimiter":   {"": {{PayloadFieldName: "user", NumElementsToKeep: 1, HeaderName: "u"}}},
		"bad path":       {"": {{PayloadFieldName: "a..b", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "u"}}},
		"duplicate name": {"": {good, good}},
	} {
		if _, err := New(byName); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// server runs the Echo service on loopback.
func server(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterEchoServer(s, testpb.NewServer("b1"))
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func dial(t testing.TB, addr string, source Source, fallback *Rules) testpb.EchoClient {
	t.Helper()
	u, s := Interceptors(source, fallback)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(u), grpc.WithChainStreamInterceptor(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewEchoClient(cc)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The design's example, as a real grpc-go server sees it, for a unary, a
// server-streaming and a bidirectional call.
func TestServerSeesHeaders(t *testing.T) {
	c := dial(t, server(t), nil, mustRules(t, map[string][]serviceconfig.HeaderRule{"grpcconfigdns.test.v1.Echo/": seedRules}))
	check := func(what string, h map[string]string) {
		t.Helper()
		if h["resource_affinity_key"] != "foo/bar" || h["user_affinity_key"] != "roth@quux@mumble" {
			t.Errorf("%s: server saw %v", what, h)
		}
	}
	resp, err := c.Echo(ctxT(t), seedRequest)
	if err != nil {
		t.Fatal(err)
	}
	check("unary", resp.Headers)

	w, err := c.Watch(ctxT(t), seedRequest)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := w.Recv()
	if err != nil {
		t.Fatal(err)
	}
	check("server streaming", wr.Headers)

	chat, err := c.Chat(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Send(seedRequest); err != nil {
		t.Fatal(err)
	}
	cr, err := chat.Recv()
	if err != nil {
		t.Fatal(err)
	}
	check("bidi streaming", cr.Headers)
	// Later messages of the stream do not change the headers.
	if err := chat.Send(&testpb.EchoRequest{User: "other@x"}); err != nil {
		t.Fatal(err)
	}
	cr, err = chat.Recv()
	if err != nil {
		t.Fatal(err)
	}
	check("bidi streaming, second message", cr.Headers)
	chat.CloseSend()
	if _, err := chat.Recv(); err != io.EOF {
		t.Errorf("end of stream: %v", err)
	}
}

func TestApplicationHeaderWins(t *testing.T) {
	c := dial(t, server(t), nil, mustRules(t, map[string][]serviceconfig.HeaderRule{"": seedRules}))
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "user_affinity_key", "mine")
	resp, err := c.Echo(ctx, seedRequest)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Headers["user_affinity_key"] != "mine" || resp.Headers["resource_affinity_key"] != "foo/bar" {
		t.Errorf("server saw %v", resp.Headers)
	}
}

func TestWrongPathFailsWithInternal(t *testing.T) {
	rules := []serviceconfig.HeaderRule{{PayloadFieldName: "resource.name", Delimiter: '/', NumElementsToKeep: 1, HeaderName: "k"}}
	c := dial(t, server(t), nil, mustRules(t, map[string][]serviceconfig.HeaderRule{"": rules}))
	_, err := c.Echo(ctxT(t), seedRequest)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), `"resource.name"`) {
		t.Errorf("unary: %v", err)
	}
	chat, err := c.Chat(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Send(seedRequest); status.Code(err) != codes.Internal {
		t.Errorf("stream: %v", err)
	}
}

func TestServiceDefaultAndPrecedence(t *testing.T) {
	published, err := FromServiceConfig([]byte(`{"methodConfig":[
		{"name":[{"service":"grpcconfigdns.test.v1.Echo"}],"headerExtraction":[{"payloadFieldName":"user","delimiterCharacter":"@","numElementsToKeep":1,"headerName":"from_dns"}]},
		{"name":[{"service":"grpcconfigdns.test.v1.Echo","method":"Slow"}],"timeout":"5s"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	code := mustRules(t, map[string][]serviceconfig.HeaderRule{"": {{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 2, HeaderName: "from_code"}}})
	c := dial(t, server(t), func(context.Context, *grpc.ClientConn) (*Rules, error) { return published, nil }, code)
	req := &testpb.EchoRequest{User: "a@b@c"}
	// Echo matches the service's default, which sets headerExtraction.
	resp, err := c.Echo(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Headers["from_dns"] != "a" || resp.Headers["from_code"] != "" {
		t.Errorf("Echo: server saw %v", resp.Headers)
	}
	// Slow's own method config says nothing of headers: the code's rules apply.
	resp, err = c.Slow(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Headers["from_code"] != "a@b" || resp.Headers["from_dns"] != "" {
		t.Errorf("Slow: server saw %v", resp.Headers)
	}
}

func TestRulesChangeWhileTheChannelRuns(t *testing.T) {
	var current atomic.Pointer[Rules]
	c := dial(t, server(t), func(context.Context, *grpc.ClientConn) (*Rules, error) { return current.Load(), nil }, nil)
	get := func() map[string]string {
		resp, err := c.Echo(ctxT(t), seedRequest)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Headers
	}
	if h := get(); h["user_affinity_key"] != "" {
		t.Errorf("no rules yet, server saw %v", h)
	}
	current.Store(mustRules(t, map[string][]serviceconfig.HeaderRule{"": seedRules}))
	if h := get(); h["user_affinity_key"] != "roth@quux@mumble" {
		t.Errorf("after the change, server saw %v", h)
	}
	current.Store(mustRules(t, map[string][]serviceconfig.HeaderRule{"": seedRules[:1]}))
	if h := get(); h["user_affinity_key"] != "" || h["resource_affinity_key"] != "foo/bar" {
		t.Errorf("after the second change, server saw %v", h)
	}
}

// Calls made on a stream before its first message still behave: the
// stream is opened then, without extracted headers.
func TestStreamUsedBeforeFirstSend(t *testing.T) {
	c := dial(t, server(t), nil, mustRules(t, map[string][]serviceconfig.HeaderRule{"": seedRules}))
	chat, err := c.Chat(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if chat.Trailer() != nil {
		t.Error("trailer before the stream opened")
	}
	if chat.Context() == nil {
		t.Error("no context")
	}
	if err := chat.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Recv(); err != io.EOF {
		t.Errorf("Recv after CloseSend: %v", err)
	}
	if _, err := chat.Header(); err != nil {
		t.Errorf("Header: %v", err)
	}
	// Header before the first message opens the stream too.
	w, err := c.Watch(ctxT(t), seedRequest)
	if err != nil {
		t.Fatal(err)
	}
	// (Watch sends its request at once: generated code calls SendMsg.)
	md, err := w.Header()
	if err != nil || len(md.Get("backend")) == 0 {
		t.Errorf("Watch Header: %v %v", md, err)
	}
}

// quiet answers Echo with an empty response, so that benchmarks measure
// the call and its headers, not the test server echoing them back.
type quiet struct{ testpb.UnimplementedEchoServer }

func (quiet) Echo(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return &testpb.EchoResponse{}, nil
}

// BenchmarkUnary compares a unary call over bufconn with and without the
// interceptor and two rules, and with the same two headers added by hand:
// two-rules minus headers-by-hand is what extraction costs; headers-by-hand
// minus without is what gRPC charges to carry two headers.
func BenchmarkUnary(b *testing.B) {
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	testpb.RegisterEchoServer(s, quiet{})
	go s.Serve(lis)
	defer s.Stop()
	dialer := grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() })
	run := func(b *testing.B, opts ...grpc.DialOption) {
		cc, err := grpc.NewClient("passthrough:///bufnet", append(opts, dialer, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		c := testpb.NewEchoClient(cc)
		ctx := context.Background()
		if _, err := c.Echo(ctx, seedRequest); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Echo(ctx, seedRequest); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("without", func(b *testing.B) { run(b) })
	b.Run("two-rules", func(b *testing.B) {
		run(b, DialOptions(mustRules(b, map[string][]serviceconfig.HeaderRule{"": seedRules}))...)
	})
	// The same two headers set by hand: what sending them costs anyway.
	b.Run("headers-by-hand", func(b *testing.B) {
		add := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx = metadata.AppendToOutgoingContext(ctx, "resource_affinity_key", "foo/bar", "user_affinity_key", "roth@quux@mumble")
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		run(b, grpc.WithUnaryInterceptor(add))
	})
}

// BenchmarkInterceptorOnly isolates the interceptor from the transport: the
// invoker does nothing. two-rules minus headers-by-hand is the cost of
// extraction itself; headers-by-hand is what adding two headers costs in
// grpc-go's metadata API.
func BenchmarkInterceptorOnly(b *testing.B) {
	noop := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	rules := mustRules(b, map[string][]serviceconfig.HeaderRule{"": seedRules})
	u, _ := Interceptors(nil, rules)
	ctx := context.Background()
	const method = "/grpcconfigdns.test.v1.Echo/Echo"
	b.Run("no-rules", func(b *testing.B) {
		u0, _ := Interceptors(nil, nil)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = u0(ctx, method, seedRequest, nil, nil, noop)
		}
	})
	b.Run("two-rules", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = u(ctx, method, seedRequest, nil, nil, noop)
		}
	})
	b.Run("headers-by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c := metadata.AppendToOutgoingContext(ctx, "resource_affinity_key", "foo/bar", "user_affinity_key", "roth@quux@mumble")
			_ = noop(c, method, seedRequest, nil, nil)
		}
	})
}

// proto2 fields with a declared default read as that default when unset;
// an unset field still adds no header, on the way or at the end.
func TestUnsetProto2FieldsAddNoHeader(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("p2.proto"),
		Package: proto.String("p2"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Inner"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("id"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), DefaultValue: proto.String("inner/default")},
			}},
			{Name: proto.String("Req"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("user"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), DefaultValue: proto.String("anonymous@default")},
				{Name: proto.String("inner"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".p2.Inner")},
			}},
		},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("Req")
	rules := []serviceconfig.HeaderRule{
		{PayloadFieldName: "user", Delimiter: '@', NumElementsToKeep: 1, HeaderName: "user-key"},
		{PayloadFieldName: "inner.id", Delimiter: '/', NumElementsToKeep: 1, HeaderName: "inner-key"},
	}
	r := mustRules(t, map[string][]serviceconfig.HeaderRule{"": rules})
	p, err := r.plan("/m", r.lookup("/m"), md)
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(md)
	if got := p.headers(nil, m); len(got) != 0 {
		t.Errorf("unset fields gave headers %q", got)
	}
	m.Set(md.Fields().ByName("user"), protoreflect.ValueOfString("roth@quux"))
	inner := dynamicpb.NewMessage(md.Fields().ByName("inner").Message())
	m.Set(md.Fields().ByName("inner"), protoreflect.ValueOfMessage(inner)) // set, its id unset
	if got := strings.Join(p.headers(nil, m), "|"); got != "user-key|roth" {
		t.Errorf("headers %q, want only user-key|roth", got)
	}
}
