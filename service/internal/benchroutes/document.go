package benchroutes

// The fixed document of GET /json. Its bytes must equal
// testdata/json-document.json, which every implementation (the Node twin
// too) is tested against. Struct field order fixes the key order.

type document struct {
	Service     string    `json:"service"`
	Version     int       `json:"version"`
	Description string    `json:"description"`
	Owner       owner     `json:"owner"`
	Limits      docLimits `json:"limits"`
	Formats     []string  `json:"formats"`
	Fits        []string  `json:"fits"`
	Gravities   []string  `json:"gravities"`
	Sizes       []docSize `json:"sizes"`
	Regions     []region  `json:"regions"`
	Counters    []int     `json:"counters"`
	Tags        docTags   `json:"tags"`
}

type owner struct {
	Team    string `json:"team"`
	Contact string `json:"contact"`
	Oncall  oncall `json:"oncall"`
}

type oncall struct {
	Primary      string `json:"primary"`
	Secondary    string `json:"secondary"`
	RotationDays int    `json:"rotation_days"`
}

type docLimits struct {
	MaxBodyBytes int `json:"max_body_bytes"`
	MaxPixels    int `json:"max_pixels"`
	MaxSide      int `json:"max_side"`
	MaxFrames    int `json:"max_frames"`
}

type docSize struct {
	Name   string `json:"name"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

type region struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Zones  []string `json:"zones"`
	Weight int      `json:"weight"`
	Active bool     `json:"active"`
}

type docTags struct {
	Tier        string `json:"tier"`
	CostCentre  string `json:"cost_centre"`
	Environment string `json:"environment"`
	Note        string `json:"note"`
}

func newDocument() document {
	return document{
		Service:     "thumbd",
		Version:     1,
		Description: "A fixed document served by GET /json to measure JSON serialisation on every request",
		Owner:       owner{Team: "platform-imaging", Contact: "imaging-oncall", Oncall: oncall{Primary: "ana", Secondary: "bram", RotationDays: 7}},
		Limits:      docLimits{MaxBodyBytes: 20971520, MaxPixels: 40000000, MaxSide: 4096, MaxFrames: 256},
		Formats:     []string{"png", "jpeg", "webp"},
		Fits:        []string{"cover", "contain", "fill", "inside"},
		Gravities:   []string{"centre", "attention", "entropy"},
		Sizes: []docSize{
			{Name: "small", Width: 64, Height: 64},
			{Name: "medium", Width: 256, Height: 256},
			{Name: "large", Width: 1024, Height: 768},
		},
		Regions: []region{
			{ID: 1, Name: "north", Zones: []string{"n1", "n2", "n3"}, Weight: 40, Active: true},
			{ID: 2, Name: "south", Zones: []string{"s1", "s2"}, Weight: 35, Active: true},
			{ID: 3, Name: "west", Zones: []string{"w1"}, Weight: 25, Active: false},
		},
		Counters: []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5},
		Tags:     docTags{Tier: "gold", CostCentre: "cc-1042", Environment: "benchmark", Note: "keys keep this order; no HTML-escaped characters appear"},
	}
}
