package serviceconfig_test

import (
	"fmt"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// A client decides what the records at _grpc_config.<host> mean for it:
// here gRFC A2's own example, and a canary that takes 20% of Go clients.
func ExampleChoose() {
	a2 := sc.Answer{Owner: "_grpc_config.myserver.", Records: [][]string{{
		`grpc_config=[{"serviceConfig":{"loadBalancingPolicy":"round_robin","methodConfig":[{"name":[{"service":"MyService","method":"Foo"}],"waitForReady":true}]}}]`,
	}}}
	client := sc.Client{Language: "go", Hostname: "web-1", Bucket: 37}
	o := sc.Choose(a2, client)
	fmt.Println(o.Result, o.Choice, string(o.ServiceConfig))

	canary := sc.Answer{Text: []byte(`[
	  {"clientLanguage": ["GO"], "percentage": 20, "serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}},
	  {"serviceConfig": {}}
	]`)}
	o = sc.Choose(canary, client)
	fmt.Println(o.Result, o.Choice, o.Reason)

	o = sc.Choose(sc.Answer{Owner: "_grpc_config.nowhere.", NXDomain: true}, client)
	fmt.Println(o.Result, o.Reason)
	// Output:
	// chosen 0 {"loadBalancingPolicy":"round_robin","methodConfig":[{"name":[{"service":"MyService","method":"Foo"}],"waitForReady":true}]}
	// chosen 1 choice 0: skipped: clientLanguage ["GO"] includes "go"; NO: bucket 37 > percentage 20; any host (no clientHostname); choice 1: selected: any language (no clientLanguage); any bucket (no percentage); any host (no clientHostname) (language "go", bucket 37, hostname "web-1")
	// no config no service config published: _grpc_config.nowhere. does not exist (NXDOMAIN)
}

// Publish decides whether a choice list is published, and in which form,
// as the publisher and the encode command do.
func ExamplePublish() {
	rec, _ := sc.Publish(sc.Source{Text: []byte(`[{"serviceConfig": {"methodConfig": [{"name": [{}], "timeout": "1.5s"}]}}]`)},
		sc.PublishOptions{NineDigitDurations: true})
	fmt.Println(sc.FormatTXT(rec.TXT))

	// grpc-go's own resolver matches clientLanguage "GO" only, and fails
	// the channel of a client no choice matches: refused when grpc-go is
	// among the declared clients, published for grpc-java alone.
	const javaAndGo = `[{"clientLanguage": ["go", "java"], "serviceConfig": {}}]`
	rec, ds := sc.Publish(sc.Source{Text: []byte(javaAndGo)}, sc.PublishOptions{Clients: sc.ClientGo})
	for _, d := range ds {
		fmt.Println(d.Severity, d.Code, sc.ClientEffects(&d)["go"])
	}
	rec, _ = sc.Publish(sc.Source{Text: []byte(javaAndGo)}, sc.PublishOptions{Clients: sc.ClientJava})
	fmt.Println(rec != nil)
	// Output:
	// "grpc_config=[{\"serviceConfig\":{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"1.500000000s\"}]}}]"
	// error choices-no-catch-all fails channel
	// error choice-language-case does not match the language as written (grpc-go: only "GO"; grpc-js: only "node"; C-core: only "c++")
	// true
}

// Lint reports every problem of a record, placed in the text.
func ExampleLint() {
	kind, ds := sc.Lint([]byte(`[{"percentage": 101, "serviceConfig": {}}]`), sc.LintOptions{})
	fmt.Println(kind)
	for _, d := range ds {
		fmt.Println(d)
	}
	// Output:
	// choice list
	// 1:17: error: percentage must be an integer from 0 to 100 written without sign, fraction or exponent, not 101 [choice-percentage]
}

// ParseChoices reads a record's choice list as a client does; Select and
// Explain pick a choice for a client and say why.
func ExampleChoices_Explain() {
	ch, err := sc.ParseChoices([]byte(`[{"clientHostname":["canary-1"],"serviceConfig":{}},{"serviceConfig":{}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := sc.Client{Language: "go", Hostname: "web-1", Bucket: 50}
	fmt.Println("selected:", ch.Select(client))
	for _, v := range ch.Explain(client) {
		fmt.Println(v)
	}
	// Output:
	// selected: 1
	// choice 0: skipped: any language (no clientLanguage); any bucket (no percentage); NO: clientHostname ["canary-1"] does not include "web-1"
	// choice 1: selected: any language (no clientLanguage); any bucket (no percentage); any host (no clientHostname)
}
