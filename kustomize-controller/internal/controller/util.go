package controller

import "k8s.io/apimachinery/pkg/runtime/schema"

func schemaGV(apiVersion string) (schema.GroupVersion, error) {
	return schema.ParseGroupVersion(apiVersion)
}
