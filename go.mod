module github.com/agentrt/agentrt

go 1.26
