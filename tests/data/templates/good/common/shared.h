// shared by toy templates
