#!/usr/bin/env bash
# Prints N namespaced CustomResourceDefinitions in groups of ten, as a cluster with a few
# CRD-heavy operators (Crossplane providers, cloud controllers) serves them:
#   bash tests/cluster/crds.sh N | kubectl apply -f -
# Group gNN.crds.coord.test, kinds KindMM (plural kindmms), version v1, any fields kept.
# Used by the many-types test (tests/many_types.rs) and scripts/bench.sh --crds N.
set -euo pipefail
n=${1:?usage: crds.sh N}
for ((i = 0; i < n; i++)); do
  group=$(printf 'g%02d.crds.coord.test' $((i / 10)))
  kind=$(printf 'Kind%02d' $((i % 10)))
  plural=$(printf 'kind%02ds' $((i % 10)))
  cat <<YAML
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.$group}
spec:
  group: $group
  scope: Namespaced
  names: {kind: $kind, plural: $plural, singular: ${plural%s}, listKind: ${kind}List}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
done
