package disk

import (
	"encoding/binary"
	"testing"
)

func TestParseIdentifyController(t *testing.T) {
	for _, tc := range []struct {
		oacs uint16
		fna  byte
		want nvmeController
	}{
		{0x0000, 0x00, nvmeController{}},
		{0x0002, 0x00, nvmeController{format: true}},
		{0x0017, 0x05, nvmeController{format: true, crypto: true, allNS: true}},
		{0x0008, 0x04, nvmeController{crypto: true}}, // crypto without Format NVM: no format
	} {
		b := make([]byte, 4096)
		binary.LittleEndian.PutUint16(b[256:], tc.oacs)
		b[524] = tc.fna
		got, err := parseIdentifyController(b)
		if err != nil || got != tc.want {
			t.Errorf("OACS %#x FNA %#x: %+v, %v; want %+v", tc.oacs, tc.fna, got, err, tc.want)
		}
	}
	if _, err := parseIdentifyController(make([]byte, 512)); err == nil {
		t.Error("a short identify buffer was accepted")
	}
}

// The format keeps the namespace's block format, metadata and protection
// settings: an erase must not turn 4 KiB blocks into 512-byte ones.
func TestNVMeFormatKeepsTheBlockFormat(t *testing.T) {
	for _, tc := range []struct {
		name           string
		nlbaf          byte
		flbas, dps     byte
		ses, wantCDW10 uint32
	}{
		{"format 0, user data erase", 1, 0x00, 0x00, nvmeSESUserData, 1 << 9},
		{"format 1 (4 KiB), crypto", 4, 0x01, 0x00, nvmeSESCrypto, 0x01 | 2<<9},
		{"metadata at block end, PI type 1 first", 4, 0x12, 0x09, nvmeSESUserData, 0x02 | 1<<4 | 1<<5 | 1<<8 | 1<<9},
		{"format 17 (upper index bits)", 20, 0x21, 0x00, nvmeSESUserData, 0x01 | 1<<9 | 1<<12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := make([]byte, 4096)
			ns[25], ns[26], ns[29] = tc.nlbaf, tc.flbas, tc.dps
			got, err := nvmeFormatCDW10(ns, tc.ses)
			if err != nil || got != tc.wantCDW10 {
				t.Errorf("cdw10 %#x, %v; want %#x", got, err, tc.wantCDW10)
			}
		})
	}
	ns := make([]byte, 4096)
	ns[25], ns[26] = 0, 0x03 // format 3 of a namespace listing one
	if _, err := nvmeFormatCDW10(ns, nvmeSESUserData); err == nil {
		t.Error("a format index beyond the namespace's list was accepted")
	}
}
