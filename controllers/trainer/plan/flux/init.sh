#!/bin/bash
# Runs in the flux-installer init container (a Flux "view" image): writes this node's broker
# configuration into the shared /mnt/flux volume and copies Flux there for the node container.
set -euo pipefail
config=/mnt/flux/config
mkdir -p "${config}/etc/flux/config" "${config}/etc/flux/system/cron.d" "${config}/etc/curve" \
  "${config}/run/flux" "${config}/var/lib/flux" /mnt/flux/view
echo "{{ .Hosts }}" > "${config}/etc/flux/system/hostlist"
cat > "${config}/etc/flux/config/broker.toml" <<'TOML'
{{ .BrokerConfig }}TOML
echo "Flux broker configuration of $(hostname):"
cat "${config}/etc/flux/config/broker.toml"
# The view image keeps its spack view under /opt/views/._view/<hash>; Flux needs both it and
# /opt/software, which the view links into.
view=$(ls -d /opt/views/._view/*/ | head -n 1)
cp -R "${view}"* /mnt/flux/view/
cp -R /opt/software /mnt/flux/
touch /mnt/flux/flux-operator-done.txt
