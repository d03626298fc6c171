#!/usr/bin/env bash
# Makes TLS certificates for fenced with openssl, in DIR:
#
#   scripts/certs.sh DIR                    a CA, node.crt for 127.0.0.1 and
#                                           localhost, and client.crt
#   scripts/certs.sh DIR node NAME SAN...   NAME.crt for the given names, as
#                                           IP:10.0.0.1 or DNS:n1.example
#   scripts/certs.sh DIR client NAME        NAME.crt, a client certificate
#                                           whose subject is CN=NAME
#
# Every certificate is signed by DIR's CA (ca.crt, ca.key), which the first
# run makes and later runs reuse, so nodes and clients made one by one trust
# each other. A node certificate is good for both ends of TLS (serverAuth
# and clientAuth): a node serves clients with it (--tls-cert-file) and
# presents it to its peers. Each certificate's key is NAME.key (mode 0600);
# certificates are valid for about two years, the CA for ten. Keep ca.key
# away from the nodes: it is only needed to issue certificates. Running the
# script again into another directory makes an unrelated CA.
#
# Prints nothing on success; on failure prints openssl's output and exits 1.
set -euo pipefail

help=$(sed -n '2,10s/^# \{0,1\}//p' "$0")
usage() {
  echo "$help" >&2
  exit 2
}
(($# >= 1)) || usage
dir=$1
shift
# Names become file names in DIR and certificate subjects: keep them plain.
case ${1:-} in
"") (($# == 0)) || usage ;;
node) (($# >= 3)) || usage ;;
client) (($# == 2)) || usage ;;
*) usage ;;
esac
if (($# >= 2)) && ! [[ $2 =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ && $2 != ca ]]; then
  echo "certs.sh: bad name '$2'" >&2
  exit 2
fi

# run runs a command, showing its output only if it fails.
run() {
  local out
  if ! out=$("$@" 2>&1); then
    printf 'certs.sh: %s failed:\n%s\n' "$*" "$out" >&2
    exit 1
  fi
}

mkdir -p "$dir"
cd "$dir"
umask 077
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# newkey writes an ECDSA P-256 key, which every TLS client of fenced
# (Go, OpenSSL's redis-cli and Python, Node) accepts.
newkey() { run openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

if [[ ! -f ca.crt || ! -f ca.key ]]; then
  newkey ca.key
  # A random name tells two CAs apart in logs and error messages.
  run openssl req -x509 -new -key ca.key -out ca.crt -days 3650 -sha256 \
    -subj "/O=fenced/CN=fenced CA $(openssl rand -hex 4)" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash"
  chmod 0644 ca.crt
fi

# issue NAME EKU [SAN] writes NAME.key and NAME.crt, signed by the CA.
issue() {
  local name=$1 eku=$2 san=${3:-}
  local ext=$tmp/$name.ext csr=$tmp/$name.csr
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$eku"
    echo "authorityKeyIdentifier=keyid"
    if [[ -n $san ]]; then echo "subjectAltName=$san"; fi
  } >"$ext"
  newkey "$name.key"
  run openssl req -new -key "$name.key" -out "$csr" -subj "/O=fenced/CN=$name"
  # A random serial: certificates issued at any time never share one.
  run openssl x509 -req -in "$csr" -CA ca.crt -CAkey ca.key -out "$name.crt" \
    -days 825 -sha256 -set_serial "0x$(openssl rand -hex 15)" -extfile "$ext"
  chmod 0644 "$name.crt"
}

case ${1:-} in
"")
  issue node serverAuth,clientAuth "IP:127.0.0.1,IP:::1,DNS:localhost"
  issue client clientAuth
  ;;
node)
  shift
  name=$1
  shift
  issue "$name" serverAuth,clientAuth "$(IFS=,; echo "$*")"
  ;;
client) issue "$2" clientAuth ;;
esac
