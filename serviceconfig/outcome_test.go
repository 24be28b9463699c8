package serviceconfig

import (
	"reflect"
	"strings"
	"testing"
)

// a2Example is the record of gRFC A2's example, for server myserver.
const a2Example = `grpc_config=[{"serviceConfig":{"loadBalancingPolicy":"round_robin","methodConfig":[{"name":[{"service":"MyService","method":"Foo"}],"waitForReady":true}]}}]`

func TestChoose(t *testing.T) {
	goClient := Client{Language: "go", Hostname: "web-1", Bucket: 30}
	records := func(values ...string) [][]string {
		var out [][]string
		for _, v := range values {
			out = append(out, EncodeTXT([]byte(v)))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		answer Answer
		want   Result
		choice int
		// reason and code, when set, must appear in the reason and among
		// the diagnostics.
		reason, code string
	}{
		{"gRFC A2's example", Answer{Records: [][]string{{a2Example}}}, Chosen, 0, "choice 0: selected", ""},
		{"NXDOMAIN", Answer{Owner: "_grpc_config.myserver.", NXDomain: true}, NoConfig, -1, "_grpc_config.myserver. does not exist (NXDOMAIN)", ""},
		{"no TXT record", Answer{}, NoConfig, -1, "has no TXT records", ""},
		{"only other TXT records", Answer{Records: [][]string{{"v=spf1 -all"}}}, NoConfig, -1, "starts with grpc_config=", ""},
		{"no choice matches", Answer{Records: records(`[{"clientLanguage":["java"],"serviceConfig":{}}]`)}, NoConfig, -1,
			`no choice matches this client (language "go", bucket 30, hostname "web-1"): choice 0: skipped: NO: clientLanguage ["java"] does not include "go"`, ""},
		{"percentage above the bucket", Answer{Records: records(`[{"percentage":29,"serviceConfig":{}},{"percentage":30,"serviceConfig":{}}]`)}, Chosen, 1,
			"choice 0: skipped: any language (no clientLanguage); NO: bucket 30 > percentage 29", ""},
		// gRFC A2: "If any unexpected field name is present in this object,
		// the entire config is considered invalid."
		{"unknown key", Answer{Records: records(`[{"clientHostName":["web-1"],"serviceConfig":{}}]`)}, Invalid, -1, "invalid record: ", "choice-unknown-key"},
		{"percentage not an integer", Answer{Records: records(`[{"percentage":50.5,"serviceConfig":{}}]`)}, Invalid, -1, "", "choice-percentage"},
		{"serviceConfig missing", Answer{Records: records(`[{"clientLanguage":["go"]}]`)}, Invalid, -1, "", "choice-service-config"},
		{"two grpc_config records", Answer{Records: records(`[{"serviceConfig":{}}]`, `[{"serviceConfig":{}}]`)}, Invalid, -1, "", "txt-multiple-config"},
		{"chosen config invalid", Answer{Records: records(`[{"serviceConfig":{"loadBalancingPolicy":"UnknownPolicy"}}]`)}, Invalid, 0, "choice 0's service config", "lb-policy"},
		// gRFC A21: "only the chosen service config affects the validation".
		{"another choice's config invalid", Answer{Records: records(`[{"clientLanguage":["java"],"serviceConfig":{"loadBalancingPolicy":"UnknownPolicy"}},{"serviceConfig":{}}]`)}, Chosen, 1, "choice 1: selected", ""},
		{"text: bare service config", Answer{Text: []byte(`{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`)}, Chosen, 0, "", ""},
		{"text: other TXT records only", Answer{Text: []byte(`"v=spf1 -all"`)}, NoConfig, -1, "", ""},
		{"text: invalid", Answer{Text: []byte("[\n {\"serviceConfig\":{}, \"percentage\": 101}\n]")}, Invalid, -1, "", "choice-percentage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Choose(tc.answer, goClient)
			if o.Result != tc.want || o.Choice != tc.choice {
				t.Fatalf("%v choice %d, want %v choice %d (%s)", o.Result, o.Choice, tc.want, tc.choice, o.Reason)
			}
			if !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", o.Reason, tc.reason)
			}
			if (o.Result == Invalid) != (o.Err != nil) || (o.Result == Invalid) != o.Diagnostics.HasErrors() {
				t.Errorf("%v with error %v and diagnostics %v", o.Result, o.Err, o.Diagnostics)
			}
			if (o.Result == Chosen) != (o.GrpcGoConfig != nil && o.ServiceConfig != nil) {
				t.Errorf("%v with configs %s and %s", o.Result, o.ServiceConfig, o.GrpcGoConfig)
			}
			if tc.code != "" && !hasCode(o.Diagnostics, tc.code) {
				t.Errorf("diagnostics %v, want %s", o.Diagnostics, tc.code)
			}
			// The resolver's entry point decides the same for answers
			// from DNS.
			if tc.answer.Text == nil {
				if r := ChooseRecords(tc.answer, goClient); !reflect.DeepEqual(r, o) {
					t.Errorf("ChooseRecords: %+v\nChoose: %+v", r, o)
				}
			}
		})
	}
}

func hasCode(ds Diagnostics, code string) bool {
	for _, d := range ds {
		if d.Code == code {
			return true
		}
	}
	return false
}

// The chosen config comes as published, and in the form grpc-go reads as
// the spec means.
func TestChooseGivesBothForms(t *testing.T) {
	o := Choose(Answer{Text: []byte(`[{"serviceConfig": {"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["unavailable"]}}]}}]`)}, Client{Language: "go", Bucket: 1})
	if o.Result != Chosen {
		t.Fatalf("%v: %s", o.Result, o.Reason)
	}
	if !strings.Contains(string(o.ServiceConfig), `["unavailable"]`) || !strings.Contains(string(o.GrpcGoConfig), `["UNAVAILABLE"]`) {
		t.Errorf("published %s, grpc-go's %s", o.ServiceConfig, o.GrpcGoConfig)
	}
}

// Diagnostics of a record read from text are placed in it, as lint
// places them.
func TestChoosePlacesDiagnosticsInText(t *testing.T) {
	text := "{\n  \"methodConfig\": [{\"name\": [{}], \"timeout\": \"1m\"}]\n}\n"
	o := Choose(Answer{Text: []byte(text)}, Client{Bucket: 1})
	_, lint := Lint([]byte(text), LintOptions{})
	if o.Result != Invalid || len(o.Diagnostics) == 0 || len(lint) == 0 {
		t.Fatalf("%v %v; lint %v", o.Result, o.Diagnostics, lint)
	}
	d, l := o.Diagnostics[0], lint[0]
	if d.Line != l.Line || d.Column != l.Column || d.Path != l.Path || d.Code != l.Code {
		t.Errorf("Choose placed %+v, lint %+v", d, l)
	}
}
