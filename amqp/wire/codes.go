package wire

// Type codes (part 1.6).
const (
	codeDescribed  = 0x00
	codeNull       = 0x40
	codeTrue       = 0x41
	codeFalse      = 0x42
	codeUint0      = 0x43
	codeUlong0     = 0x44
	codeList0      = 0x45
	codeUbyte      = 0x50
	codeByte       = 0x51
	codeSmallUint  = 0x52
	codeSmallUlong = 0x53
	codeSmallInt   = 0x54
	codeSmallLong  = 0x55
	codeBool       = 0x56
	codeUshort     = 0x60
	codeShort      = 0x61
	codeUint       = 0x70
	codeInt        = 0x71
	codeFloat      = 0x72
	codeChar       = 0x73
	codeDecimal32  = 0x74
	codeUlong      = 0x80
	codeLong       = 0x81
	codeDouble     = 0x82
	codeTimestamp  = 0x83
	codeDecimal64  = 0x84
	codeDecimal128 = 0x94
	codeUUID       = 0x98
	codeVbin8      = 0xa0
	codeStr8       = 0xa1
	codeSym8       = 0xa3
	codeVbin32     = 0xb0
	codeStr32      = 0xb1
	codeSym32      = 0xb3
	codeList8      = 0xc0
	codeMap8       = 0xc1
	codeList32     = 0xd0
	codeMap32      = 0xd1
	codeArray8     = 0xe0
	codeArray32    = 0xf0
)

// Descriptor codes of the performatives, SASL frames, delivery states,
// termini, error and message sections (domain 0x00000000).
const (
	DescOpen                  = 0x10
	DescBegin                 = 0x11
	DescAttach                = 0x12
	DescFlow                  = 0x13
	DescTransfer              = 0x14
	DescDisposition           = 0x15
	DescDetach                = 0x16
	DescEnd                   = 0x17
	DescClose                 = 0x18
	DescError                 = 0x1d
	DescReceived              = 0x23
	DescAccepted              = 0x24
	DescRejected              = 0x25
	DescReleased              = 0x26
	DescModified              = 0x27
	DescSource                = 0x28
	DescTarget                = 0x29
	DescDeleteOnClose         = 0x2b
	DescSASLMechanisms        = 0x40
	DescSASLInit              = 0x41
	DescSASLChallenge         = 0x42
	DescSASLResponse          = 0x43
	DescSASLOutcome           = 0x44
	DescHeader                = 0x70
	DescDeliveryAnnotations   = 0x71
	DescMessageAnnotations    = 0x72
	DescProperties            = 0x73
	DescApplicationProperties = 0x74
	DescData                  = 0x75
	DescAMQPSequence          = 0x76
	DescAMQPValue             = 0x77
	DescFooter                = 0x78
)
