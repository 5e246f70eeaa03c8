# Sourced by the scripts that run on a lent GPU machine with no Go
# (device-session.sh, train-profile.sh): unpacks the binaries carried in
# $CARRY (default gpucarry/) into $T, and points PATH and LD_LIBRARY_PATH at
# the machine's Python torch, whose libtorch memo links against, wherever
# it is installed (the machine may set LD_LIBRARY_PATH itself).
C=${CARRY:-gpucarry}
T=/tmp/memo-device-bin
mkdir -p "$T"
# Each once: scripts that source this again (mfu.sh from issue41*.sh) find
# the binary already unpacked, newer than its .xz.
for f in memo train.test model.test precision.test engine.test torchx.test dist.test; do
	[[ -f $C/$f.xz && ! $T/$f -nt $C/$f.xz ]] && xz -dc "$C/$f.xz" >"$T/$f" && chmod +x "$T/$f"
done
export PATH=/opt/torch/.venv/bin:$PATH
torchlib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=$torchlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
