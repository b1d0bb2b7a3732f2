package baremetal

import (
	"slices"
	"testing"
)

func TestNetbootIDs(t *testing.T) {
	// A Dell-style SMBIOS UUID as iPXE prints it, and the forms BMCs give.
	const smbios = "4c4c4544-0042-3010-8056-b4c04f4d3132"
	ids := NetbootUUIDs("4C4C4544-0042-3010-8056-B4C04F4D3132")
	want := []string{
		"uuid:" + smbios,
		"uuid:44454c4c-4200-1030-8056-b4c04f4d3132", // first three fields swapped
		"uuid:32314d4f-c0b4-5680-1030-420044454c4c", // all 16 bytes reversed
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("NetbootUUIDs = %v, want %v", ids, want)
	}
	// Each of the BMC's orders finds the UUID iPXE prints.
	for _, bmcForm := range []string{smbios, "44454c4c-4200-1030-8056-b4c04f4d3132", "32314d4f-c0b4-5680-1030-420044454c4c"} {
		if !slices.Contains(NetbootUUIDs(bmcForm), NetbootUUID(smbios)) {
			t.Errorf("a BMC reporting %s does not match iPXE's %s", bmcForm, smbios)
		}
	}
	for _, bad := range []string{"", "not-a-uuid", "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"} {
		if NetbootUUID(bad) != "" || NetbootUUIDs(bad) != nil {
			t.Errorf("%q gave netboot ids", bad)
		}
	}
	if got := NetbootMAC("52-54-00-AB-CD-EF"); got != "mac:52:54:00:ab:cd:ef" {
		t.Errorf("NetbootMAC = %q", got)
	}
	for _, bad := range []string{"", "52:54:00:ab:cd", "00:00:00:00:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:00"} {
		if NetbootMAC(bad) != "" {
			t.Errorf("NetbootMAC(%q) is not empty", bad)
		}
	}
	for id, ok := range map[string]bool{
		"mac:52:54:00:ab:cd:ef": true, "uuid:" + smbios: true,
		"mac:52:54:00:AB:CD:EF": false, "mac:%": false, "uuid:" + smbios[:35] + "_": false, "mac": false, "ip:10.0.0.1": false,
	} {
		if ValidNetbootID(id) != ok {
			t.Errorf("ValidNetbootID(%q) = %v", id, !ok)
		}
	}
}
