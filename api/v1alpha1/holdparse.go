package v1alpha1

// NRIRequiredPluginsValue is what the webhook writes under
// NRIRequiredPluginsAnnotation on every podnet pod in HoldNRI mode: a YAML
// list naming only podnet's plugin.
const NRIRequiredPluginsValue = `["` + NRIPluginName + `"]`
