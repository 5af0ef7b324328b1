package profile

// Ptr returns a pointer to v, for optional fields in literals:
// Profile{Name: profile.Ptr("reviewer")}.
func Ptr[T any](v T) *T { return &v }

// DefineInlineResource returns an inline resource reference.
func DefineInlineResource(name, content string) ResourceRef {
	return ResourceRef{Kind: ResourceInline, Name: &name, Content: &content}
}

// GitHubResourceOptions are the optional parts of a GitHub resource.
type GitHubResourceOptions struct {
	Repository, Ref, Name *string
}

// DefineGitHubResource returns a GitHub resource reference at path, with
// only the options that are set.
func DefineGitHubResource(path string, opts GitHubResourceOptions) ResourceRef {
	return ResourceRef{Kind: ResourceGitHub, Path: &path, Repository: opts.Repository, Ref: opts.Ref, Name: opts.Name}
}

// DefinePublicConfig returns a public config value.
func DefinePublicConfig(value string) ConfigValue {
	return ConfigValue{Kind: ConfigPublic, Value: &value}
}

// DefineSecretRef returns a reference to the secret named key. Format is
// "raw", "bearer", or "" to omit it.
func DefineSecretRef(key, format string) ConfigValue {
	c := ConfigValue{Kind: ConfigSecretRef, Key: &key}
	if format != "" {
		c.Format = &format
	}
	return c
}
