// Package instruments is the one definition of agentrt's OpenTelemetry
// metric instruments: their names, units, descriptions and histogram
// buckets. The run metrics (NewRun: ended runs, token usage, cost, turn
// latency) are recorded by package telemetry's observers; the fleet's
// (NewFleet: attempts started and runs ended, queue depth, event append
// latency) by a fleet worker. Both record on whatever meter they are
// given, so one meter provider — agentrt worker's Prometheus exporter,
// or an OTLP one — carries them all.
//
// It depends on the OpenTelemetry metric API only, below every package
// that records, so that the fleet (layer 4) and telemetry (layer 5)
// share one definition.
package instruments
