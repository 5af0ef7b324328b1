package contract

import (
	"errors"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// PermissionGrant is the graduated decision of a permission interaction:
// the single value of its "grant" field.
type PermissionGrant string

// Permission grants. Each but deny needs its response scope on the
// request: allow_once needs interaction, allow_session needs session,
// allow_always needs persistent.
const (
	GrantAllowOnce    PermissionGrant = "allow_once"
	GrantAllowSession PermissionGrant = "allow_session"
	GrantAllowAlways  PermissionGrant = "allow_always"
	GrantDeny         PermissionGrant = "deny"
)

// Field names of a permission interaction's answer.
const (
	// PermissionGrantField carries the PermissionGrant (a single-select).
	PermissionGrantField = "grant"
	// PermissionFeedbackField carries the user's optional free-text reason.
	PermissionFeedbackField = "feedback"
)

// RequiredScope returns the response scope a request must permit for g to
// be accepted; deny needs none and returns "".
func (g PermissionGrant) RequiredScope() InteractionResponseScope {
	switch g {
	case GrantAllowOnce:
		return ResponseScopeInteraction
	case GrantAllowSession:
		return ResponseScopeSession
	case GrantAllowAlways:
		return ResponseScopePersistent
	}
	return ""
}

// PermissionAnswerSpecOptions configures PermissionAnswerSpec.
type PermissionAnswerSpecOptions struct {
	// ResponseScopes are the scopes the request will permit; nil means
	// only "interaction" (a one-time grant).
	ResponseScopes []InteractionResponseScope
	// NoFeedback leaves out the free-text feedback field.
	NoFeedback bool
}

// PermissionAnswerSpec builds the answer spec of a permission request: a
// required single-select "grant" offering only the grants its scopes
// permit (and always deny), plus an optional multiline "feedback" field.
// It cannot offer a grant broader than the request allows.
func PermissionAnswerSpec(opts PermissionAnswerSpecOptions) InteractionAnswerSpec {
	scopes := opts.ResponseScopes
	if scopes == nil {
		scopes = []InteractionResponseScope{ResponseScopeInteraction}
	}
	has := func(s InteractionResponseScope) bool {
		for _, x := range scopes {
			if x == s {
				return true
			}
		}
		return false
	}
	var options []InteractionFieldOption
	for _, o := range []struct {
		grant PermissionGrant
		label string
	}{{GrantAllowOnce, "Allow once"}, {GrantAllowSession, "Allow for this session"}, {GrantAllowAlways, "Always allow"}} {
		if has(o.grant.RequiredScope()) {
			options = append(options, InteractionFieldOption{Value: string(o.grant), Label: o.label})
		}
	}
	options = append(options, InteractionFieldOption{Value: string(GrantDeny), Label: "Deny"})
	required, multiline := true, true
	fields := []InteractionField{{Type: InteractionFieldTypeSelect, Name: PermissionGrantField, Label: "Decision", Required: &required, Options: options}}
	if !opts.NoFeedback {
		fields = append(fields, InteractionField{Type: InteractionFieldTypeText, Name: PermissionFeedbackField, Label: "Feedback (optional)", Multiline: &multiline})
	}
	return InteractionAnswerSpec{Fields: fields}
}

// ValidateInteractionAnswer checks accepted answer data against its spec:
// only declared fields, every required field present (null and "" count
// as absent), and each value of its field's type and bounds. It returns
// the problems found, or nil.
func ValidateInteractionAnswer(spec InteractionAnswerSpec, data InteractionData) []string {
	s, err := canonjson.ToValue(spec)
	if err != nil {
		return []string{err.Error()}
	}
	var d canonjson.Value
	if data != nil {
		if d, err = canonjson.ToValue(data); err != nil {
			return []string{err.Error()}
		}
	}
	return intAnswerErrors(s, d)
}

// intAnswerErrors validates answer data (absent when !data.IsValid())
// against an answer spec value.
func intAnswerErrors(spec, data canonjson.Value) []string {
	spec, err := schema.Run(KindInteractionAnswerSpec, InteractionAnswerSpecSchema, spec)
	if err != nil {
		return intIssueMessages(err)
	}
	if data.IsValid() && data.Kind() != canonjson.Object {
		return []string{"interaction data must be an object"}
	}
	if data.Len() > MaxMapEntries {
		return []string{"interaction data has too many fields"}
	}
	fields, _ := spec.Get("fields")
	known := make(map[string]bool, fields.Len())
	for _, f := range fields.Items() {
		known[str(f, "name")] = true
	}
	var errs []string
	for _, m := range data.Members() {
		name := `"` + m.Name + `"`
		if canonjson.UTF16Len(m.Name) > MaxIdentifierLength {
			errs = append(errs, "unknown field "+name)
			continue
		}
		switch v := m.Value; v.Kind() {
		case canonjson.String:
			if canonjson.UTF16Len(v.Str()) > MaxStringLength {
				errs = append(errs, "field "+name+" exceeds the contract string bound")
			}
		case canonjson.Array:
			if v.Len() > MaxArrayLength {
				errs = append(errs, "field "+name+" has too many values")
			}
			for _, item := range v.Items() {
				if item.Kind() != canonjson.String || canonjson.UTF16Len(item.Str()) > MaxStringLength {
					errs = append(errs, "field "+name+" contains an invalid bounded value")
					break
				}
			}
		case canonjson.Object:
			if v.Len() > 3 {
				errs = append(errs, "field "+name+" contains an invalid object value")
			}
		}
		if !known[m.Name] {
			errs = append(errs, "unknown field "+name)
		}
	}
	for _, f := range fields.Items() {
		errs = intFieldAnswerErrors(errs, f, data)
	}
	return errs
}

// intFieldAnswerErrors appends the problems of one field's answer.
func intFieldAnswerErrors(errs []string, f, data canonjson.Value) []string {
	fieldName := str(f, "name")
	name := `"` + fieldName + `"`
	v, has := data.Get(fieldName)
	if !has || v.Kind() == canonjson.Null || v.Kind() == canonjson.String && v.Str() == "" {
		if intFlag(f, "required") {
			errs = append(errs, "missing required field "+name)
		}
		return errs
	}
	maxLength, hasMaxLength := f.Get("maxLength")
	switch InteractionFieldType(str(f, "type")) {
	case InteractionFieldTypeText:
		if v.Kind() != canonjson.String {
			errs = append(errs, "field "+name+" must be a string")
		} else if hasMaxLength && float64(canonjson.UTF16Len(v.Str())) > maxLength.Float() {
			errs = append(errs, "field "+name+" exceeds maxLength "+intJSString(maxLength))
		}
	case InteractionFieldTypeSecret:
		if v.Kind() != canonjson.String && !intIsSecretHandle(v) {
			errs = append(errs, "field "+name+" must be a string or one-use secret handle")
		} else if v.Kind() == canonjson.String && hasMaxLength && float64(canonjson.UTF16Len(v.Str())) > maxLength.Float() {
			errs = append(errs, "field "+name+" exceeds maxLength "+intJSString(maxLength))
		}
	case InteractionFieldTypeNumber:
		if v.Kind() != canonjson.Number || !canonjson.IsFinite(v.Float()) {
			errs = append(errs, "field "+name+" must be a finite number")
			break
		}
		if min, ok := f.Get("min"); ok && v.Float() < min.Float() {
			errs = append(errs, "field "+name+" below min "+intJSString(min))
		}
		if max, ok := f.Get("max"); ok && v.Float() > max.Float() {
			errs = append(errs, "field "+name+" above max "+intJSString(max))
		}
	case InteractionFieldTypeBoolean:
		if v.Kind() != canonjson.Bool {
			errs = append(errs, "field "+name+" must be a boolean")
		}
	case InteractionFieldTypeSelect:
		if v.Kind() != canonjson.Array {
			errs = append(errs, "field "+name+" must be an array of option values")
			break
		}
		if v.Len() > MaxArrayLength {
			errs = append(errs, "field "+name+" has too many option values")
			break
		}
		if !intFlag(f, "multi") && v.Len() > 1 {
			errs = append(errs, "field "+name+" accepts a single value")
		}
		if intFlag(f, "required") && v.Len() == 0 {
			errs = append(errs, "field "+name+" requires a selection")
		}
		options, _ := f.Get("options")
		allowed := make(map[string]bool, options.Len())
		for _, o := range options.Items() {
			allowed[str(o, "value")] = true
		}
		for _, choice := range v.Items() {
			if choice.Kind() == canonjson.String && allowed[choice.Str()] {
				continue
			}
			if intFlag(f, "allowCustom") {
				// Write-ins are open but must be non-blank strings.
				if choice.Kind() != canonjson.String || canonjson.TrimJS(choice.Str()) == "" {
					errs = append(errs, "field "+name+" has blank write-in value")
				}
				continue
			}
			errs = append(errs, "field "+name+` has invalid option "`+intJSString(choice)+`"`)
		}
	}
	return errs
}

// intIsSecretHandle reports whether v is exactly a one-use secret handle.
func intIsSecretHandle(v canonjson.Value) bool {
	if v.Kind() != canonjson.Object || v.Len() != 3 {
		return false
	}
	kind, okKind := v.Get("kind")
	oneUse, okOneUse := v.Get("oneUse")
	handle, okHandle := v.Get("handleId")
	if !okKind || !okOneUse || !okHandle || kind.Kind() != canonjson.String || kind.Str() != InteractionSecretReferenceKind ||
		oneUse.Kind() != canonjson.Bool || !oneUse.Bool() {
		return false
	}
	_, err := schema.Run("", BoundedIdentifier, handle)
	return err == nil
}

// intJSString renders a JSON value the way JavaScript's String() does,
// for messages.
func intJSString(v canonjson.Value) string {
	switch v.Kind() {
	case canonjson.String:
		return v.Str()
	case canonjson.Number:
		return string(canonjson.AppendNumber(nil, v.Float()))
	case canonjson.Bool:
		if v.Bool() {
			return "true"
		}
		return "false"
	case canonjson.Null:
		return "null"
	case canonjson.Array:
		parts := make([]string, v.Len())
		for i, item := range v.Items() {
			if item.Kind() != canonjson.Null {
				parts[i] = intJSString(item)
			}
		}
		return strings.Join(parts, ",")
	case canonjson.Object:
		return "[object Object]"
	}
	return "undefined"
}

func intIssueMessages(err error) []string {
	var se *schema.Error
	if !errors.As(err, &se) {
		return []string{err.Error()}
	}
	out := make([]string, len(se.Issues))
	for i, is := range se.Issues {
		out[i] = is.Message
	}
	return out
}

// intResolutionErrors checks a resolution (a response or a default)
// against the request value it resolves: its answer against the spec,
// no answer fields on a declined or cancelled resolution, and for a
// permission request exactly one grant within the request's scopes.
func intResolutionErrors(request, resolution canonjson.Value) []string {
	spec, _ := request.Get("answerSpec")
	data, hasData := resolution.Get("data")
	outcome := str(resolution, "outcome")
	if outcome != string(InteractionOutcomeAccepted) {
		// A resolution that submits no answer has no business carrying
		// a secret: that could only leak it into a transport that keeps it.
		var errs []string
		secret := intSecretFields(spec)
		for _, m := range data.Members() {
			if secret[m.Name] {
				errs = append(errs, `field "`+m.Name+`" is secret and cannot ride a `+outcome+" resolution")
			}
		}
		if data.Len() > 0 {
			errs = append(errs, "a "+outcome+" resolution cannot carry answer fields")
		}
		return errs
	}
	if !hasData {
		data = canonjson.Value{}
	}
	errs := intAnswerErrors(spec, data)
	if str(request, "kind") != InteractionKindPermission {
		return errs
	}
	grant, _ := data.Get(PermissionGrantField)
	if grant.Kind() != canonjson.Array || grant.Len() != 1 {
		return append(errs, `permission response must select exactly one "grant" value`)
	}
	g := grant.Items()[0]
	if _, err := schema.Run(KindPermissionGrant, PermissionGrantSchema, g); err != nil {
		return append(errs, `permission response has invalid grant "`+intJSString(g)+`"`)
	}
	required := PermissionGrant(g.Str()).RequiredScope()
	if required == "" {
		return errs // deny is always permitted
	}
	scopes, ok := request.Get("responseScopes")
	permitted := !ok && required == ResponseScopeInteraction || ok && intContainsString(scopes.Items(), string(required))
	if !permitted {
		errs = append(errs, `permission grant "`+g.Str()+`" exceeds the request's response scopes`)
	}
	return errs
}

// intValidateResponse validates a response value against a request value,
// in the reference's order. It returns nil when the response is valid.
func intValidateResponse(request, response canonjson.Value) []string {
	req, err := schema.Run(KindInteractionRequest, InteractionRequestSchema, request)
	if err != nil {
		return intIssueMessages(err)
	}
	// Reserved keys are refused on the raw data, before anything could
	// drop them.
	if data, ok := response.Get("data"); ok && data.Kind() == canonjson.Object {
		var forbidden []string
		for _, m := range data.Members() {
			if IsReservedInteractionFieldName(m.Name) {
				forbidden = append(forbidden, `unknown field "`+m.Name+`"`)
			}
		}
		if forbidden != nil {
			return forbidden
		}
	}
	resp, err := schema.Run(KindInteractionResponse, InteractionResponseSchema, response)
	if err != nil {
		return intIssueMessages(err)
	}
	if str(req, "id") != str(resp, "id") {
		return []string{"response id does not match the outstanding interaction"}
	}
	if allowed, ok := req.Get("allowedOutcomes"); ok && !intContainsString(allowed.Items(), str(resp, "outcome")) {
		return []string{"response outcome is not allowed by the outstanding interaction"}
	}
	return intResolutionErrors(req, resp)
}

// ValidateInteractionResponse checks a response against the exact
// outstanding request: the request must be valid (digest included), the
// response must answer it with an allowed outcome, carry only declared
// fields of the right types, and a permission grant must lie within the
// request's response scopes (none given: a one-time grant only). It
// returns ok, or the problems found. Secret answers in an accepted
// response are ephemeral: redact them before persisting the response.
func ValidateInteractionResponse(request *InteractionRequest, response *InteractionResponse) (ok bool, errs []string) {
	if request == nil || response == nil {
		return false, []string{"an interaction request and a response are both required"}
	}
	req, err := canonjson.ToValue(request)
	if err != nil {
		return false, []string{err.Error()}
	}
	resp, err := canonjson.ToValue(response)
	if err != nil {
		return false, []string{err.Error()}
	}
	errs = intValidateResponse(req, resp)
	return len(errs) == 0, errs
}

// ValidateInteractionResponseValue is ValidateInteractionResponse over
// decoded JSON arguments, for generic callers such as `agentrt check
// --function validateInteractionResponse`. It returns {"ok": true} or
// {"ok": false, "errors": [...]}.
func ValidateInteractionResponseValue(request, response canonjson.Value) canonjson.Value {
	errs := intValidateResponse(request, response)
	if len(errs) == 0 {
		return canonjson.ObjectValue([]canonjson.Member{{Name: "ok", Value: canonjson.BoolValue(true)}})
	}
	items := make([]canonjson.Value, len(errs))
	for i, e := range errs {
		items[i] = canonjson.StringValue(e)
	}
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "ok", Value: canonjson.BoolValue(false)},
		{Name: "errors", Value: canonjson.ArrayValue(items)},
	})
}

// ValidateInteractionResponseCommand checks a response command against
// the exact outstanding request: the command must be valid, its binding
// must name the request (digest, run, provider, environment, execution,
// interaction and, when given, session), and its response must pass
// ValidateInteractionResponse.
func ValidateInteractionResponseCommand(request *InteractionRequest, command *InteractionResponseCommand) (ok bool, errs []string) {
	if request == nil || command == nil {
		return false, []string{"an interaction request and a response command are both required"}
	}
	if _, err := Validate(KindInteractionRequest, InteractionRequestSchema, request); err != nil {
		return false, intIssueMessages(err)
	}
	if _, err := Validate(KindInteractionResponseCommand, InteractionResponseCommandSchema, command); err != nil {
		return false, intIssueMessages(err)
	}
	b, rb := command.Binding, request.Binding
	if b.RequestDigest != request.RequestDigest || b.RunID != rb.RunID || b.Provider != rb.Provider ||
		b.EnvironmentID != rb.EnvironmentID || b.SessionID != nil && *b.SessionID != rb.SessionID ||
		b.ExecutionID != rb.ExecutionID || b.InteractionID != rb.InteractionID {
		return false, []string{"response command binding is stale"}
	}
	return ValidateInteractionResponse(request, &command.Response)
}
