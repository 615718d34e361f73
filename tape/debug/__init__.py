"""What a user looks at when something goes wrong: NaN origins, checked branches, pictures of a tape."""
