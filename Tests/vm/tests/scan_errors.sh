# Errors say what to do: no adapter, adapter down (and --bring-up), no
# capabilities (an unprivileged user), unknown adapter.
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

"$EARSHOT" scan --duration 1 >none.out 2>none.err
check "no adapter: exit status 1" [ $? -eq 1 ]
check "no adapter: the documented message" grep -q 'no Bluetooth adapter found' none.err

start_btvirt -l2
"$EARSHOT" scan --adapter hci7 --duration 1 >/dev/null 2>nosuch.err
check "unknown adapter: names the ones there are" grep -q 'no adapter hci7; the kernel has hci0, hci1' nosuch.err

hciconfig hci0 down
"$EARSHOT" scan --adapter hci0 --duration 1 >down.out 2>down.err
check "adapter down: exit status 1" [ $? -eq 1 ]
check "adapter down: the documented message" grep -q 'hci0 is down (powered off). Power it on with `earshot scan --bring-up`' down.err

nobody "$EARSHOT" scan --adapter hci0 --bring-up --duration 1 >/dev/null 2>nobody-up.err
check "--bring-up without CAP_NET_ADMIN: exit 1" [ $? -eq 1 ]
check "--bring-up without CAP_NET_ADMIN: names the capability" grep -q 'raw HCI access needs CAP_NET_ADMIN' nobody-up.err

"$EARSHOT" scan --adapter hci0 --bring-up --duration 1 >/dev/null 2>up.err
check "--bring-up: scans" grep -q 'hci0: scanning' up.err
check "--bring-up: hci0 is powered on" hci_is_up hci0

nobody "$EARSHOT" scan --adapter hci0 --duration 1 >/dev/null 2>nobody.err
rc=$?
cat nobody.err
check "no CAP_NET_RAW: exit 1" [ $rc -eq 1 ]
check "no CAP_NET_RAW: names the capability" grep -q 'raw HCI access needs CAP_NET_RAW' nobody.err
check "no CAP_NET_RAW: prints the setcap line" grep -qE 'sudo setcap cap_net_raw,cap_net_admin\+eip /.*earshot$' nobody.err
check "no CAP_NET_RAW: prints the systemd line" grep -q 'AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN' nobody.err
stop_btvirt
