# AltBeacon and Eddystone-UID regions live (issue 28): `earshot monitor` on
# hci0; hci1 advertises an AltBeacon (Radius Networks' company id, the
# AltBeacon spec's example layout), hci2 an Eddystone-UID (service data
# 0xFEAA, frame 0x00). Region "alt" names the AltBeacon's ID1:ID2:ID3,
# region "eddy" the Eddystone namespace alone (any instance), region
# "ibeacon" an iBeacon with the AltBeacon's UUID (which must stay outside:
# formats are kept apart). Both enter; both exit after their advertisers stop.
# hci3 advertises a format of the config's own ([layout "acme"]: code AC 1E,
# a 6-byte serial, a little-endian batch), which region "crate" names by
# serial alone (issue 39: a region names a user layout's beacons).
EXIT_AFTER=5
ALT_UUID=2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6
NAMESPACE=8f2c1a3e5b7d4e90a1c2
INSTANCE=0000000000a1
start_btvirt -l4
wait_for 10 hci_exists hci2 && hciconfig hci2 up
wait_for 10 hci_exists hci3 && hciconfig hci3 up
hexbytes() { echo "$1" | tr -d '-' | sed 's/../& /g'; }
advertise_ad hci1 02 01 06 1b ff 18 01 be ac $(hexbytes $ALT_UUID) 00 01 00 02 c5 00
advertise_ad hci2 02 01 06 03 03 aa fe 17 16 aa fe 00 ee $(hexbytes $NAMESPACE$INSTANCE) 00 00
advertise_ad hci3 02 01 06 0f ff ff ff ac 1e 01 02 03 04 05 06 2a 00 c8 00
cat >formats.conf <<CONF
[scanner]
adapter = hci0
[region "alt"]
altbeacon = $ALT_UUID:1:2
exit_after = $EXIT_AFTER
[region "eddy"]
eddystone = $NAMESPACE
exit_after = $EXIT_AFTER
[region "ibeacon"]
uuid = $ALT_UUID
exit_after = $EXIT_AFTER
[layout "acme"]
layout = m:2-3=ac1e,i:4-9,i:10-11l,p:12-12:-3,d:13-13
[region "crate"]
beacon = acme:010203040506
exit_after = $EXIT_AFTER
CONF
rm -f /tmp/adv.stop /tmp/adv.hci1 /tmp/adv.hci2 /tmp/adv.hci3
noted_advertising_loop hci1 &
ADV1=$!
noted_advertising_loop hci2 &
ADV2=$!
noted_advertising_loop hci3 &
ADV3=$!
"$EARSHOT" monitor --config formats.conf >mon.out 2>mon.err &
MON=$!
has() { grep -q "\"event\":\"$1\",\"region\":\"$2\"$3" mon.out; }
check "the AltBeacon region is inside" wait_for 60 has state alt ',"state":"inside"'
check "the Eddystone region (namespace only) is inside" wait_for 60 has state eddy ',"state":"inside"'
check "the region of the layout's beacons (serial only) is inside" wait_for 60 has state crate ',"state":"inside"'
check "ranging names the AltBeacon by format and ids" wait_for 20 \
  grep -q "\"format\":\"altbeacon\",\"uuid\":\"$ALT_UUID\",\"major\":1,\"minor\":2" mon.out
check "ranging names the Eddystone by namespace and instance" wait_for 20 \
  grep -q "\"format\":\"eddystone\",\"namespace\":\"$NAMESPACE\",\"instance\":\"$INSTANCE\"" mon.out
check "ranging names the layout's beacon by its layout and ids (the batch most significant byte first)" \
  wait_for 20 grep -q '"format":"acme","id1":"010203040506","id2":"002a"' mon.out
touch /tmp/adv.stop
wait $ADV1 $ADV2 $ADV3
check "the AltBeacon region exits" wait_for $((EXIT_AFTER + 20)) has exit alt
check "the Eddystone region exits" wait_for $((EXIT_AFTER + 20)) has exit eddy
check "the layout's region exits" wait_for $((EXIT_AFTER + 20)) has exit crate
check "the iBeacon region with the same UUID never went inside" \
  [ "$(grep -c '"region":"ibeacon","state":"inside"' mon.out)" -eq 0 ]
kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
head -20 mon.out; cat mon.err
stop_btvirt
