package candidate

import "testing"

func TestSPDXExpressions(t *testing.T) {
	// CND-18, CAND §4.3 and §23.2 V40/V40b: standard SPDX expressions only.
	for expr, want := range map[string]bool{
		"MIT":                                  true,
		"(MIT OR Apache-2.0) AND BSD-3-Clause": true,
		"MIT or Apache-2.0":                    true,
		"Apache-2.0 WITH LLVM-exception":       true,
		"GPL-2.0+":                             true,
		"GPL-2.0 +":                            false,
		"mit":                                  false,
		"LicenseRef-Internal":                  false,
		"DocumentRef-x:LicenseRef-y":           false,
		"MIT AND LicenseRef-Mutable-Terms":     false,
		"NotALicense-9":                        false,
		"MIT OR":                               false,
		"(MIT":                                 false,
		"MIT WITH MIT":                         false,
		"":                                     false,
		"MIT\tOR Apache-2.0":                   false,
		"((MIT)) OR (Apache-2.0 AND (BSD-2-Clause))": true,
	} {
		if got := isStandardSPDXExpression(expr); got != want {
			t.Errorf("isStandardSPDXExpression(%q) = %v, want %v", expr, got, want)
		}
	}
}
