# AltBeacon and Eddystone-UID regions live (issue 28): `earshot monitor` on
# hci0; hci1 advertises an AltBeacon (Radius Networks' company id, the
# AltBeacon spec's example layout), hci2 an Eddystone-UID (service data
# 0xFEAA, frame 0x00). Region "alt" names the AltBeacon's ID1:ID2:ID3,
# region "eddy" the Eddystone namespace alone (any instance), region
# "ibeacon" an iBeacon with the AltBeacon's UUID (which must stay outside:
# formats are kept apart). Both enter; both exit after their advertisers stop.
EXIT_AFTER=5
ALT_UUID=2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6
NAMESPACE=8f2c1a3e5b7d4e90a1c2
INSTANCE=0000000000a1
start_btvirt -l3
wait_for 10 hci_exists hci2 && hciconfig hci2 up
hexbytes() { echo "$1" | tr -d '-' | sed 's/../& /g'; }
advertise_ad hci1 02 01 06 1b ff 18 01 be ac $(hexbytes $ALT_UUID) 00 01 00 02 c5 00
advertise_ad hci2 02 01 06 03 03 aa fe 17 16 aa fe 00 ee $(hexbytes $NAMESPACE$INSTANCE) 00 00
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
CONF
rm -f /tmp/adv.stop /tmp/adv.hci1 /tmp/adv.hci2
noted_advertising_loop hci1 &
ADV1=$!
noted_advertising_loop hci2 &
ADV2=$!
"$EARSHOT" monitor --config formats.conf >mon.out 2>mon.err &
MON=$!
has() { grep -q "\"event\":\"$1\",\"region\":\"$2\"$3" mon.out; }
check "the AltBeacon region is inside" wait_for 60 has state alt ',"state":"inside"'
check "the Eddystone region (namespace only) is inside" wait_for 60 has state eddy ',"state":"inside"'
check "ranging names the AltBeacon by format and ids" wait_for 20 \
  grep -q "\"format\":\"altbeacon\",\"uuid\":\"$ALT_UUID\",\"major\":1,\"minor\":2" mon.out
check "ranging names the Eddystone by namespace and instance" wait_for 20 \
  grep -q "\"format\":\"eddystone\",\"namespace\":\"$NAMESPACE\",\"instance\":\"$INSTANCE\"" mon.out
touch /tmp/adv.stop
wait $ADV1 $ADV2
check "the AltBeacon region exits" wait_for $((EXIT_AFTER + 20)) has exit alt
check "the Eddystone region exits" wait_for $((EXIT_AFTER + 20)) has exit eddy
check "the iBeacon region with the same UUID never went inside" \
  [ "$(grep -c '"region":"ibeacon","state":"inside"' mon.out)" -eq 0 ]
kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
head -20 mon.out; cat mon.err
stop_btvirt
