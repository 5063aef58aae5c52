module github.com/thumbd/thumbd

go 1.26.0

require (
	github.com/davidbyttow/govips/v2 v2.16.0 // indirect
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/rakyll/hey v0.1.5 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
