package wire

import "fmt"

// Error is an AMQP error (part 2.8.14) carried as it came: Info is the
// encoded info map, not decoded.
type Error struct {
	Condition   string
	Description string
	Info        []byte
}

func (e *Error) Error() string {
	if e.Description == "" {
		return e.Condition
	}
	return fmt.Sprintf("%s: %s", e.Condition, e.Description)
}

// StateKind says which delivery state (part 3.4) a DeliveryState holds.
type StateKind uint8

// Delivery states; StateNone is an absent state.
const (
	StateNone StateKind = iota
	StateReceived
	StateAccepted
	StateRejected
	StateReleased
	StateModified
)

var stateNames = [...]string{"none", "received", "accepted", "rejected", "released", "modified"}

func (k StateKind) String() string {
	if int(k) < len(stateNames) {
		return stateNames[k]
	}
	return fmt.Sprintf("state(%d)", k)
}

// DeliveryState is a delivery's state or outcome.
type DeliveryState struct {
	Kind              StateKind
	Error             *Error // rejected
	DeliveryFailed    bool   // modified
	UndeliverableHere bool   // modified
	Annotations       []byte // modified: the encoded message-annotations map
	SectionNumber     uint32 // received
	SectionOffset     uint64 // received
}

// Source is a link's source terminus (part 3.5.3); unparsed fields are
// kept encoded.
type Source struct {
	Address               string
	Durable               uint32
	ExpiryPolicy          string
	Timeout               uint32
	Dynamic               bool
	DynamicNodeProperties []byte
	DistributionMode      string
	Filter                []byte
	DefaultOutcome        []byte
	Outcomes              []string
	Capabilities          []string
}

// Target is a link's target terminus (part 3.5.4).
type Target struct {
	Address               string
	Durable               uint32
	ExpiryPolicy          string
	Timeout               uint32
	Dynamic               bool
	DynamicNodeProperties []byte
	Capabilities          []string
}

// Open is the open performative (part 2.7.1).
type Open struct {
	ContainerID         string
	Hostname            string
	MaxFrameSize        uint32 // default 4294967295
	ChannelMax          uint16 // default 65535
	IdleTimeout         uint32 // milliseconds, 0 = none
	OutgoingLocales     []string
	IncomingLocales     []string
	OfferedCapabilities []string
	DesiredCapabilities []string
	Properties          []byte
}

// Begin is the begin performative (part 2.7.2).
type Begin struct {
	RemoteChannel       uint16
	HasRemoteChannel    bool
	NextOutgoingID      uint32
	IncomingWindow      uint32
	OutgoingWindow      uint32
	HandleMax           uint32 // default 4294967295
	OfferedCapabilities []string
	DesiredCapabilities []string
	Properties          []byte
}

// Roles of a link end (part 2.8.1).
const (
	RoleSender   = false
	RoleReceiver = true
)

// Settle modes (part 2.8.2, 2.8.3).
const (
	SndUnsettled uint8 = 0
	SndSettled   uint8 = 1
	SndMixed     uint8 = 2
	RcvFirst     uint8 = 0
	RcvSecond    uint8 = 1
)

// Attach is the attach performative (part 2.7.3).
type Attach struct {
	Name                 string
	Handle               uint32
	Role                 bool
	SndSettleMode        uint8 // default mixed
	RcvSettleMode        uint8 // default first
	Source               *Source
	Target               *Target
	Unsettled            []byte
	IncompleteUnsettled  bool
	InitialDeliveryCount uint32
	MaxMessageSize       uint64 // 0 = no limit
	OfferedCapabilities  []string
	DesiredCapabilities  []string
	Properties           []byte
}

// Flow is the flow performative (part 2.7.4). Has* say whether the
// optional fields were present.
type Flow struct {
	NextIncomingID    uint32
	HasNextIncomingID bool
	IncomingWindow    uint32
	NextOutgoingID    uint32
	OutgoingWindow    uint32
	Handle            uint32
	HasHandle         bool
	DeliveryCount     uint32
	HasDeliveryCount  bool
	LinkCredit        uint32
	HasLinkCredit     bool
	Available         uint32
	HasAvailable      bool
	Drain             bool
	Echo              bool
	Properties        []byte
}

// Transfer is the transfer performative (part 2.7.5); Payload is what
// follows it in the frame. DeliveryTag and Payload alias the frame.
type Transfer struct {
	Handle           uint32
	DeliveryID       uint32
	HasDeliveryID    bool
	DeliveryTag      []byte
	MessageFormat    uint32
	Settled          bool
	More             bool
	RcvSettleMode    uint8
	HasRcvSettleMode bool
	State            DeliveryState
	Resume           bool
	Aborted          bool
	Batchable        bool
	Payload          []byte
}

// Disposition is the disposition performative (part 2.7.6).
type Disposition struct {
	Role      bool
	First     uint32
	Last      uint32
	HasLast   bool
	Settled   bool
	State     DeliveryState
	Batchable bool
}

// Detach is the detach performative (part 2.7.7).
type Detach struct {
	Handle uint32
	Closed bool
	Error  *Error
}

// End is the end performative (part 2.7.8).
type End struct{ Error *Error }

// Close is the close performative (part 2.7.9).
type Close struct{ Error *Error }

// SASLMechanisms is sasl-mechanisms (part 5.3.3.1).
type SASLMechanisms struct{ Mechanisms []string }

// SASLInit is sasl-init (part 5.3.3.2).
type SASLInit struct {
	Mechanism       string
	InitialResponse []byte
	Hostname        string
}

// SASL outcome codes (part 5.3.3.6).
const (
	SASLOk      uint8 = 0
	SASLAuth    uint8 = 1
	SASLSys     uint8 = 2
	SASLSysPerm uint8 = 3
	SASLSysTemp uint8 = 4
)

// SASLOutcome is sasl-outcome (part 5.3.3.6).
type SASLOutcome struct {
	Code           uint8
	AdditionalData []byte
}
