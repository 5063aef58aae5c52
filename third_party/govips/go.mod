module github.com/davidbyttow/govips/v2

go 1.15

require (
	golang.org/x/image v0.18.0
	golang.org/x/net v0.25.0
)
