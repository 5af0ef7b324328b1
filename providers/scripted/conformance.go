package scripted

// ConformanceScript is the script under which the scripted provider
// passes contract/providertest's scenarios, for this package's tests and
// for anything that serves the scripted provider onward (agentrt serve,
// the remote provider). It exercises every ability: a question the
// caller must answer, a permission request that expires, one whose
// answers cannot be delivered, a turn that runs until cancelled, a
// catch-all turn with text and usage, and an exact process.
const ConformanceScript = `{"turns":[
 {"match":"providertest: ask","repeat":true,"steps":[
  {"text":"Asking."},
  {"interaction":{"request":{"id":"colour","kind":"question","title":"Which colour?",
   "answerSpec":{"fields":[
    {"type":"text","name":"reason","label":"Why"},
    {"type":"select","name":"colour","label":"Colour","required":true,"options":[{"value":"red","label":"Red"},{"value":"blue","label":"Blue"}]},
    {"type":"secret","name":"token","label":"Token"}]}}}},
  {"text":" Thanks."}]},
 {"match":"providertest: expire","repeat":true,"steps":[
  {"interaction":{"request":{"id":"run-tool","kind":"permission","title":"Run the tool?","timeoutMs":1,"onTimeout":"fail",
   "answerSpec":{"fields":[{"type":"select","name":"grant","label":"Grant","required":true,
    "options":[{"value":"allow_once","label":"Allow once"},{"value":"deny","label":"Deny"}]}]}}}}]},
 {"match":"providertest: unreachable","repeat":true,"steps":[
  {"interaction":{"unreachable":true,"request":{"id":"vendor","kind":"acme.review","title":"Review?",
   "answerSpec":{"fields":[{"type":"boolean","name":"ok","label":"OK"},{"type":"number","name":"score","label":"Score","min":1,"max":5}]}}}}]},
 {"match":"providertest: live","repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":"done"}]},
 {"repeat":true,"steps":[{"text":"Hello."},{"usage":{"inputTokens":12,"outputTokens":3},"mode":"delta"}]}
],"processes":[
 {"executable":"/opt/tool/greet","args":["--name","world"],"output":[
  {"stdout":"hello "},{"delayMs":2},{"stderr":"note: scripted\n"},{"stdout":"world\n"}]}
]}`
