# Boot check: the modules load and btvirt gives two LE controllers.
check "bluetooth module loaded" grep -q '^bluetooth ' /proc/modules
check "snd_aloop and snd_dummy loaded" bash -c "grep -q '^snd_aloop ' /proc/modules && grep -q '^snd_dummy ' /proc/modules"
start_btvirt -l2
check "btvirt gives hci0 and hci1 up" hci_is_up hci1
check "earshot runs in the VM" "$EARSHOT" --version
stop_btvirt
