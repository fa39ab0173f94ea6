#!/bin/bash
# Wraps the TrainJob's command: every node starts a Flux broker from the configuration the
# flux-installer wrote; the lead node ({{ .LeadHost }}) runs the command across the instance
# with `flux run {{ .RunFlags }}`, the others serve as followers until the lead exits.
view=/mnt/flux/view
config=/mnt/flux/config
export PATH="${PATH}:${view}/bin"
cp -R /mnt/flux/software/* /opt/software/ 2>/dev/null || true
python_root=$(find "${view}/lib" -maxdepth 1 -type d -name 'python3*' | head -n 1)
export PYTHONPATH="${PYTHONPATH:-}:${python_root}/site-packages"
export FLUX_RC_EXTRA="${view}/etc/flux/rc1.d"
cat > /mnt/flux/flux-view.sh <<ENV
export PATH=${PATH}
export PYTHONPATH=${PYTHONPATH}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:${view}/lib
export fluxsocket=local://${config}/run/flux/local
ENV

# The broker reads the CURVE certificate only when the file is private to its owner.
cert="${config}/etc/curve/curve.cert"
cp /curve/curve.cert "${cert}"
chmod go-r "${cert}"
chown -R "$(id -u)" "${cert}"

hosts=$(cat "${config}/etc/flux/system/hostlist")
flux R encode --hosts="${hosts}" {{ .ResourceFlags }} > "${config}/etc/flux/system/R"

export STATE_DIR="${config}/var/lib/flux"
export FLUX_OUTPUT_DIR=/tmp/fluxout
mkdir -p "${STATE_DIR}" "${FLUX_OUTPUT_DIR}"
broker=(-o --config "${config}/etc/flux/config"
  "-Scron.directory=${config}/etc/flux/system/cron.d" -Stbon.fanout=256
  "-Srundir=${config}/run/flux" "-Sstatedir=${STATE_DIR}"
  "-Slocal-uri=local://${config}/run/flux/local" -Slog-stderr-level=0 -Slog-stderr-mode=local)
command="$*"

if [ "$(hostname)" = "{{ .LeadHost }}" ]; then
  if [ -z "${command}" ]; then
    # No command: an interactive instance for users to `flux proxy` into.
    flux broker --config-path "${config}/etc/flux/config" "${broker[@]:3}"
  else
    flux start "${broker[@]}" flux run {{ .RunFlags }} ${command}
  fi
else
  # Followers retry until the lead broker accepts them; they end when the instance does.
  until flux start "${broker[@]}"; do
    echo "Flux follower: the lead broker is not ready, retrying in 15s"
    sleep 15
  done
fi
touch /mnt/flux/flux-operator-complete.txt
